package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/layout"
)

// WatchesFile is the Helm operator's list of kinds served by charts, at
// the root of a templates directory: accepted as the Helm operator reads
// it, so that a project moves without editing it.
const WatchesFile = "watches.yaml"

// watchKeys are the Helm operator's fields of a watches.yaml entry; every
// other field of an entry is one of kind.yaml's.
var watchKeys = []string{"group", "version", "kind", "chart", "overrideValues", "selector",
	"watchDependentResources", "reconcilePeriod", "maxConcurrentReconciles"}

// watchFolder is one entry of watches.yaml: its chart's folder and the
// kind.yaml it amounts to.
type watchFolder struct {
	dir      string
	kindYAML []byte
}

// readWatches reads root's watches.yaml, if any, into one folder per
// entry. An entry that cannot be read is an error of the whole file: the
// entries are one list, and which kinds a broken list serves is not clear.
func readWatches(root string) ([]watchFolder, error) {
	file := filepath.Join(root, WatchesFile)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var entries []map[string]any
	if err := yaml.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []watchFolder
	for i, e := range entries {
		w, err := watchEntry(root, e)
		if err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", file, i, err)
		}
		out = append(out, w)
	}
	return out, nil
}

// watchEntry turns one entry into its chart's folder and kind.yaml:
// group and version make apiVersion; maxConcurrentReconciles is workers;
// overrideValues, `path.to.key: value` with $VARS expanded from the
// operator's environment as the Helm operator does, become nested values.
// watchDependentResources and reconcilePeriod are accepted and have no
// use: every kind watches its children, and a reconcile at rest writes
// nothing, so no period is needed (docs/helm.md).
func watchEntry(root string, e map[string]any) (watchFolder, error) {
	str := func(k string) string { s, _ := e[k].(string); return s }
	group, version, kind, chartPath := str("group"), str("version"), str("kind"), str("chart")
	if version == "" || kind == "" || chartPath == "" {
		return watchFolder{}, errors.New("version, kind and chart are required")
	}
	spec := map[string]any{}
	for k, v := range e {
		if !slices.Contains(watchKeys, k) {
			spec[k] = v
		}
	}
	spec["apiVersion"] = schema.GroupVersion{Group: group, Version: version}.String()
	spec["kind"] = kind
	if s, ok := e["selector"]; ok {
		spec["selector"] = s
	}
	if n, ok := e["maxConcurrentReconciles"]; ok {
		spec["workers"] = n
	}
	if ov, ok := e["overrideValues"].(map[string]any); ok {
		values := map[string]any{}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range ov {
				if !yield(k) {
					return
				}
			}
		}) {
			if err := strvals.ParseInto(fmt.Sprintf("%s=%s", k, os.ExpandEnv(fmt.Sprint(ov[k]))), values); err != nil {
				return watchFolder{}, fmt.Errorf("overrideValues: %s: %w", k, err)
			}
		}
		spec["overrideValues"] = values
	}
	kindYAML, err := yaml.Marshal(spec)
	if err != nil {
		return watchFolder{}, err
	}
	dir := chartPath
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	return watchFolder{dir: filepath.Clean(dir), kindYAML: kindYAML}, nil
}

// readWatch reads the chart of a watches.yaml entry as a kind folder,
// with the entry as its kind.yaml.
func readWatch(w watchFolder) (layout.Files, error) {
	fsys := os.DirFS(w.dir)
	if !chart.IsChart(fsys) {
		return nil, fmt.Errorf("%s: not a chart (no %s)", w.dir, chart.File)
	}
	files, err := chart.Read(fsys)
	if err != nil {
		return nil, err
	}
	if _, ok := files[KindFile]; ok {
		return nil, fmt.Errorf("the chart has a %s and a %s entry: keep one", KindFile, WatchesFile)
	}
	files[KindFile] = w.kindYAML
	return files, nil
}

// watchSource names a watches.yaml entry's folder in errors and across
// reloads: its chart's folder, and the kind when two entries share it.
func watchSource(w watchFolder, shared bool) string {
	if !shared {
		return w.dir
	}
	var s struct{ Kind string }
	_ = yaml.Unmarshal(w.kindYAML, &s)
	return w.dir + "#" + strings.ToLower(s.Kind)
}
