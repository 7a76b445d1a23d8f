package chart

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/tmplop/operator/engine/render"
)

// Cluster is what .Capabilities tells templates about the cluster: from
// discovery when the operator runs, Helm's defaults offline.
type Cluster struct {
	// KubeVersion is the API server's version, e.g. v1.37.2.
	KubeVersion string
	// APIVersions are the served group/versions and group/version/Kinds.
	APIVersions []string
}

// Offline is what helm template gives templates without a cluster: Helm's
// default Kubernetes version unless kubeVersion is set, and Helm's
// default API versions with apiVersions added (its --api-versions).
func Offline(kubeVersion string, apiVersions []string) Cluster {
	cl := Cluster{KubeVersion: kubeVersion}
	if len(apiVersions) > 0 {
		cl.APIVersions = append(slices.Clone([]string(chartutil.DefaultVersionSet)), apiVersions...)
	}
	return cl
}

// capabilities is cl as Helm's templates read it.
func (cl Cluster) capabilities() (*chartutil.Capabilities, error) {
	caps := chartutil.DefaultCapabilities.Copy()
	if cl.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(cl.KubeVersion)
		if err != nil {
			return nil, err
		}
		caps.KubeVersion = *kv
	}
	if cl.APIVersions != nil {
		// Clipped: a template's append must never write into the
		// array every render shares.
		caps.APIVersions = chartutil.VersionSet(slices.Clip(cl.APIVersions))
	}
	return caps, nil
}

// Dots builds, for one object, the templates of the charts its values
// enable, and the dot of each template Helm would render:
// the object's values over the chart's (overrideValues over both),
// dependencies enabled by their conditions and tags, each template seeing
// its chart's .Values, .Chart and .Files, and .Template. Templates of a
// disabled subchart have none, and render nothing.
//
// .Release.Name and .Release.Namespace are the object's; .Release.Revision
// is its metadata.generation, which counts the changes of its spec as
// Helm's revision counts upgrades; .Release.IsInstall holds until the
// object's status has an observedGeneration, .Release.IsUpgrade after.
//
// The work is the render's, held to its budget b (work): what it took is
// returned for the render to start with (render.Input.Spent). The values
// failing values.schema.json, a dependency that cannot be processed, or
// the budget, is a *render.Error: the same spec fails the same way.
func (c *Chart) Dots(ctx context.Context, obj map[string]any, cl Cluster, b render.Budget) (*render.Set, map[string]map[string]any, render.Spent, error) {
	w := newWork(ctx, b)
	set, dots, err := c.dots(w, obj, cl)
	return set, dots, w.done(), err
}

func (c *Chart) dots(w *work, obj map[string]any, cl Cluster) (*render.Set, map[string]map[string]any, error) {
	if err := c.chargeValues(w, obj); err != nil {
		return nil, nil, err
	}
	vals, err := c.values(obj)
	if err != nil {
		return nil, nil, &render.Error{Template: "values.yaml", Message: err.Error()}
	}
	caps, err := cl.capabilities()
	if err != nil {
		return nil, nil, &render.Error{Message: "capabilities: " + err.Error()}
	}
	if kv := c.root.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, nil, &render.Error{Template: File, Message: fmt.Sprintf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", kv, caps.KubeVersion.String())}
	}
	tree := copyChart(c.root)
	if err := chartutil.ProcessDependenciesWithMerge(tree, vals); err != nil {
		return nil, nil, &render.Error{Template: File, Message: "dependencies: " + err.Error()}
	}
	if err := w.check(File); err != nil {
		return nil, nil, err
	}
	// Helm's own validation would fetch what the schema names: the
	// schemas compiled at load validate instead (validate).
	top, err := chartutil.ToRenderValuesWithSchemaValidation(tree, vals, release(obj), caps, true)
	if err != nil {
		return nil, nil, &render.Error{Template: "values.yaml", Message: err.Error()}
	}
	if err := w.check(SchemaFile); err != nil {
		return nil, nil, err
	}
	values, _ := top["Values"].(chartutil.Values)
	if err := c.validate(tree, values, w); err != nil {
		return nil, nil, err
	}
	set, err := c.setFor(tree)
	if err != nil {
		return nil, nil, err
	}
	dots := map[string]map[string]any{}
	scopes(tree, top, dots)
	return set, dots, nil
}

// chargeValues charges the render's budget, before any copy is made, for
// what Helm's copies of the object's values will allocate: the object's
// spec (and overrideValues) as many times as a render copies them. What
// the chart's own values cost is the folder's, bounded at load.
func (c *Chart) chargeValues(w *work, obj map[string]any) error {
	left := w.b.MaxOutputBytes - w.spent
	var size int64
	for _, v := range []any{obj["spec"], c.override} {
		if m, isMap := v.(map[string]any); v == nil || isMap && len(m) == 0 {
			continue // nothing to copy
		}
		n, ok, deep := valuesCost(v, left)
		if deep {
			return &render.Error{Template: "values.yaml", Message: fmt.Sprintf(
				"the object's values nest more than %d levels deep: Helm's copies of them would take time growing faster than their size", maxValuesDepth)}
		}
		size += n
		if !ok {
			break
		}
	}
	return w.charge("values.yaml", size*c.copies, func() string {
		return fmt.Sprintf("%d copies of the object's values, %d bytes or more each", c.copies, size)
	})
}

// validate is chartutil.ValidateAgainstSchema over the processed tree
// with the schemas compiled at load, within w: each chart's values
// against its schema, a subchart's under its name, with Helm's message.
func (c *Chart) validate(tree *helmchart.Chart, values map[string]any, w *work) error {
	if len(c.schemas) == 0 {
		return nil
	}
	var sb strings.Builder
	var walk func(ch *helmchart.Chart, values map[string]any) error
	walk = func(ch *helmchart.Chart, values map[string]any) error {
		if s := c.schemas[ch.ChartFullPath()]; s != nil {
			if err := s.validate(values, w); err != nil {
				var re *render.Error
				if errors.As(err, &re) {
					return err // the budget
				}
				fmt.Fprintf(&sb, "%s:\n", ch.Name())
				sb.WriteString(validationMessage(err))
			}
		}
		for _, sub := range ch.Dependencies() {
			raw, ok := values[sub.Name()]
			if !ok || raw == nil {
				continue
			}
			subValues, ok := raw.(map[string]any)
			if !ok {
				fmt.Fprintf(&sb, "%s:\ninvalid type for values: expected object (map), got %T\n", sub.Name(), raw)
				continue
			}
			if err := walk(sub, subValues); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(tree, values); err != nil {
		return err
	}
	if sb.Len() > 0 {
		return &render.Error{Template: SchemaFile, Message: "values don't meet the specifications of the schema(s) in the following chart(s):\n" + sb.String()}
	}
	return nil
}

// values is the object's spec with overrideValues put over it; a null in
// either stays, to remove the chart's default as in Helm.
func (c *Chart) values(obj map[string]any) (map[string]any, error) {
	spec, _ := obj["spec"].(map[string]any)
	vals, _ := copyValue(spec).(map[string]any)
	if vals == nil {
		vals = map[string]any{}
	}
	if len(c.override) == 0 {
		return vals, nil
	}
	over := copyValue(c.override).(map[string]any)
	return chartutil.MergeTables(over, vals), nil
}

// release is .Release for obj (Dots says what each field counts).
func release(obj map[string]any) chartutil.ReleaseOptions {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	namespace, _ := meta["namespace"].(string)
	generation, _ := meta["generation"].(int64)
	status, _ := obj["status"].(map[string]any)
	_, reconciled := status["observedGeneration"]
	return chartutil.ReleaseOptions{Name: name, Namespace: namespace, Revision: int(max(generation, 1)),
		IsInstall: !reconciled, IsUpgrade: reconciled}
}

// scopes is pkg/engine's recAllTpls: the dot of every non-partial
// template of c and its enabled dependencies, added to dots, scoped as
// Helm scopes them. It returns c's scope, which its parent lists under
// .Subcharts.
func scopes(c *helmchart.Chart, parent chartutil.Values, dots map[string]map[string]any) map[string]any {
	subcharts := map[string]any{}
	next := map[string]any{
		"Chart": struct {
			helmchart.Metadata
			IsRoot bool
		}{*c.Metadata, c.IsRoot()},
		"Files":        newFiles(c.Files),
		"Release":      parent["Release"],
		"Capabilities": parent["Capabilities"],
		"Values":       chartutil.Values{},
		"Subcharts":    subcharts,
	}
	if c.IsRoot() {
		next["Values"] = parent["Values"]
	} else if vs, err := parent.Table("Values." + c.Name()); err == nil {
		next["Values"] = vs
	}
	for _, sub := range c.Dependencies() {
		subcharts[sub.Name()] = scopes(sub, next, dots)
	}
	full := c.ChartFullPath()
	library := strings.EqualFold(c.Metadata.Type, "library")
	for _, t := range c.Templates {
		if t == nil || library || strings.HasPrefix(path.Base(t.Name), "_") {
			continue
		}
		name := path.Join(full, t.Name)
		dot := make(map[string]any, len(next)+1)
		for k, v := range next {
			dot[k] = v
		}
		dot["Template"] = chartutil.Values{"Name": name, "BasePath": path.Join(full, "templates")}
		dots[name] = dot
	}
	return next
}
