package chart

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

// notes is the file Helm prints after an install; it renders no object.
const notes = "NOTES.txt"

// Chart is a loaded chart, ready to render objects.
type Chart struct {
	// root is the chart as loaded. It is never changed: each render
	// processes its dependencies on a copy (Dots).
	root *helmchart.Chart
	// Set holds every template of the chart and of every subchart it can
	// enable, named by path as Helm names them (mychart/templates/x.yaml,
	// mychart/charts/sub/templates/y.yaml).
	Set *render.Set
	// override is put over every object's values (watches.yaml's
	// overrideValues).
	override map[string]any
	// paths are the full paths of the chart and of every subchart it can
	// enable (Set's charts).
	paths []string
	// schemas are the values.schema.json of the chart and of its
	// subcharts, compiled, by the chart's full path.
	schemas map[string]*valuesSchema
	// copies is how many times a render copies the object's values
	// (copies), charged to the render's budget.
	copies int64

	// sets are the templates of the charts enabled for some object, when
	// not all are (setFor).
	sets setCache
}

// Options are what Load needs besides the files.
type Options struct {
	// Archive, when set, names the file of the folder that holds the
	// chart packaged (a ConfigMap folder's `*.tgz`): the chart is its
	// files, and the folder's other files are not the chart's.
	Archive string
	// Skip are the folder's own files that are not the chart's (kind.yaml,
	// crd.yaml).
	Skip []string
	// Override are put over every object's values (overrideValues).
	Override map[string]any
	// MaxUnpacked bounds what the chart's archives unpack to, all of them
	// together (DefaultMaxUnpacked when 0).
	MaxUnpacked int64
}

// setFor is the template set of the charts enabled in tree (a processed
// copy of the chart): Set when every chart is.
func (c *Chart) setFor(tree *helmchart.Chart) (*render.Set, error) {
	var enabled []string
	each(tree, tree.Name(), func(_ *helmchart.Chart, full string) { enabled = append(enabled, full) })
	slices.Sort(enabled)
	if len(enabled) == len(c.paths) {
		return c.Set, nil
	}
	key := strings.Join(enabled, "\n")
	if set, ok := c.sets.get(key); ok {
		return set, nil
	}
	set, err := render.ParseSource(source(c.root, func(p string) bool { _, found := slices.BinarySearch(enabled, p); return found }))
	if err != nil {
		return nil, err
	}
	return c.sets.add(key, set), nil
}

// HasFile reports whether the chart's folder holds a file of that name
// that is not Helm's (Chart.yaml, values.yaml, templates/, charts/).
func (c *Chart) HasFile(name string) bool {
	return slices.ContainsFunc(c.root.Files, func(f *helmchart.File) bool { return f != nil && f.Name == name })
}

// Name and Version are the chart's, from Chart.yaml.
func (c *Chart) Name() string    { return c.root.Metadata.Name }
func (c *Chart) Version() string { return c.root.Metadata.Version }

// Load loads a chart from its files (Read's): the folder's own, or the
// archive's that opts names. Every archive of the chart, nested subchart
// archives included, is unpacked against opts.MaxUnpacked before Helm's
// loader sees it; every values.schema.json is compiled, refusing one that
// names anything outside itself; and the chart's own values must not make
// each render copy more than maxChartValuesCost.
func Load(files layout.Files, opts Options) (*Chart, error) {
	u := newUnpacker(opts.MaxUnpacked)
	var buffered []*loader.BufferedFile
	where := ""
	if opts.Archive != "" {
		data, ok := files[opts.Archive]
		if !ok {
			return nil, fmt.Errorf("load chart: no file %s", opts.Archive)
		}
		var err error
		if buffered, err = u.archive(opts.Archive, data); err != nil {
			return nil, err
		}
		where = opts.Archive
	} else {
		for _, name := range files.Names() {
			if slices.Contains(opts.Skip, name) {
				continue
			}
			buffered = append(buffered, &loader.BufferedFile{Name: name, Data: files[name]})
		}
	}
	buffered, err := u.nested(where, "", buffered)
	if err != nil {
		return nil, err
	}
	root, err := loader.LoadFiles(buffered)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	if strings.EqualFold(root.Metadata.Type, "library") {
		return nil, errors.New("load chart: a library chart renders nothing; it can only be a dependency")
	}
	if err := checkDependencies(root); err != nil {
		return nil, err
	}
	if err := checkChartValues(root); err != nil {
		return nil, err
	}
	schemas, err := compileSchemas(root)
	if err != nil {
		return nil, err
	}
	set, err := render.ParseSource(source(root, nil))
	if err != nil {
		return nil, err
	}
	c := &Chart{root: root, Set: set, override: opts.Override, schemas: schemas, copies: copies(root)}
	each(root, root.Name(), func(_ *helmchart.Chart, full string) { c.paths = append(c.paths, full) })
	return c, nil
}

// compileSchemas compiles the values.schema.json of c and of every
// subchart a render can enable, once each, by full path.
func compileSchemas(c *helmchart.Chart) (map[string]*valuesSchema, error) {
	out := map[string]*valuesSchema{}
	done := map[*helmchart.Chart]*valuesSchema{}
	var err error
	each(c, c.Name(), func(sub *helmchart.Chart, full string) {
		if err != nil || sub.Schema == nil {
			return
		}
		s, ok := done[sub] // one subchart under two aliases
		if !ok {
			file := path.Join(strings.TrimPrefix(strings.TrimPrefix(full, c.Name()), "/"), SchemaFile)
			if s, err = compileSchema(file, sub.Schema); err != nil {
				return
			}
			done[sub] = s
		}
		out[full] = s
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkDependencies refuses a chart whose Chart.yaml names a dependency
// that its charts/ folder does not hold (helm dependency build was not
// run): Helm refuses to install it too.
func checkDependencies(c *helmchart.Chart) error {
	if err := chartutil.ProcessDependencies(copyChart(c), chartutil.Values{}); err != nil {
		return fmt.Errorf("load chart: %w", err)
	}
	var missing []string
	for _, d := range c.Metadata.Dependencies {
		found := slices.ContainsFunc(c.Dependencies(), func(sub *helmchart.Chart) bool {
			return sub.Name() == d.Name && chartutil.IsCompatibleRange(d.Version, sub.Metadata.Version)
		})
		if !found {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("load chart: dependencies not in charts/: %s (run helm dependency build)", strings.Join(missing, ", "))
	}
	for _, sub := range c.Dependencies() {
		if err := checkDependencies(sub); err != nil {
			return err
		}
	}
	return nil
}

// source is every template a render of c can use, named as Helm's engine
// names them, in the order Helm parses them: deepest paths first, so that
// where a chart and a subchart define the same named template, the
// chart's wins. The children are the templates that are neither partials
// (`_*`) nor NOTES.txt, in the same order: Helm executes them in it.
func source(c *helmchart.Chart, enabled func(chartPath string) bool) render.Source {
	var src render.Source
	each(c, c.Name(), func(sub *helmchart.Chart, full string) {
		if enabled != nil && !enabled(full) {
			return
		}
		for _, t := range sub.Templates {
			if t == nil {
				continue
			}
			name := path.Join(full, t.Name)
			partial := strings.HasPrefix(path.Base(t.Name), "_")
			if strings.EqualFold(sub.Metadata.Type, "library") && !partial {
				continue // Helm renders nothing of a library but its partials
			}
			src.Files = append(src.Files, render.SourceFile{Name: name, Text: string(t.Data)})
			if !partial && !strings.HasSuffix(name, notes) {
				src.Children = append(src.Children, name)
			}
		}
	})
	slices.SortFunc(src.Files, func(a, b render.SourceFile) int { return helmParseOrder(a.Name, b.Name) })
	// Executed in Helm's order too: templates share .Values, and one may
	// set what a later one reads.
	slices.SortFunc(src.Children, helmParseOrder)
	return src
}

// helmParseOrder is pkg/engine's sortTemplates: more path segments first,
// then reverse name order.
func helmParseOrder(a, b string) int {
	ca, cb := strings.Count(a, "/"), strings.Count(b, "/")
	if ca != cb {
		return cb - ca
	}
	return strings.Compare(b, a)
}

// each calls fn for c and every subchart a render can enable, with its
// full path (root/charts/sub/charts/subsub), as chartutil's
// processDependencyEnabled would lay them out with every condition true:
// a dependency named in Chart.yaml under its alias, the others under their
// own names.
func each(c *helmchart.Chart, full string, fn func(*helmchart.Chart, string)) {
	fn(c, full)
	for _, sub := range c.Dependencies() {
		listed := false
		for _, d := range c.Metadata.Dependencies {
			if d == nil || sub.Name() != d.Name || !chartutil.IsCompatibleRange(d.Version, sub.Metadata.Version) {
				continue
			}
			listed = true
			name := d.Name
			if d.Alias != "" {
				name = d.Alias
			}
			each(sub, full+"/charts/"+name, fn)
		}
		if !listed {
			each(sub, full+"/charts/"+sub.Name(), fn)
		}
	}
}
