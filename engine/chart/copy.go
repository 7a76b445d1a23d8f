package chart

import (
	helmchart "helm.sh/helm/v3/pkg/chart"
)

// copyChart copies what chartutil.ProcessDependencies changes in a chart
// tree (the dependency lists, their Enabled flags and import-values, each
// chart's values), so that one loaded chart serves every render. The
// templates and files are shared: nothing changes them.
func copyChart(c *helmchart.Chart) *helmchart.Chart {
	out := *c
	if c.Metadata != nil {
		md := *c.Metadata
		md.Dependencies = make([]*helmchart.Dependency, len(c.Metadata.Dependencies))
		for i, d := range c.Metadata.Dependencies {
			if d != nil {
				dc := *d
				md.Dependencies[i] = &dc
			}
		}
		out.Metadata = &md
	}
	if c.Values != nil {
		out.Values = copyValue(c.Values).(map[string]any)
	}
	deps := make([]*helmchart.Chart, 0, len(c.Dependencies()))
	for _, sub := range c.Dependencies() {
		deps = append(deps, copyChart(sub))
	}
	out.SetDependencies(deps...)
	return &out
}

// copyValue deep-copies values as YAML decodes them (maps, lists,
// scalars). A null stays a null: in values it removes a default.
func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = copyValue(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = copyValue(e)
		}
		return l
	}
	return v
}
