package catalog

import (
	"testing"

	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/render"
)

// BenchmarkChartChildren is one render of a chart kind's children, what
// every reconcile of its objects pays: the chart's work for the object
// (values, Helm's coalescing and dependencies, the schema's validation)
// and the templates. The bench's chart (hack/bench/charts/benchapp) and
// the shipped example (templates/webapp).
func BenchmarkChartChildren(b *testing.B) {
	cases := []struct {
		name, dir string
		spec      map[string]any
	}{
		{name: "benchapp", dir: "../../hack/bench/charts/benchapp", spec: map[string]any{"size": int64(2), "image": "nginx:1.27",
			"ports": []any{map[string]any{"port": int64(80), "targetPort": int64(8080)}}}},
		{name: "webapp", dir: "../../templates/webapp", spec: map[string]any{"replicaCount": int64(2),
			"image": map[string]any{"repository": "nginx", "tag": "1.27"}}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			k, err := LoadKind(tc.dir)
			if err != nil {
				b.Fatal(err)
			}
			obj := map[string]any{"apiVersion": k.Spec.APIVersion, "kind": k.Spec.Kind,
				"metadata": map[string]any{"name": "b1", "namespace": "ns", "uid": "u1", "generation": int64(1)}, "spec": tc.spec}
			in := render.Input{Object: obj}
			if _, err := k.Children(b.Context(), in, chart.Cluster{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.Children(b.Context(), in, chart.Cluster{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
