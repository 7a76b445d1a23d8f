package examples_test

import (
	"testing"

	"github.com/tmplop/operator/engine/render"
)

// BenchmarkRender is one reconcile's rendering of each example: the
// children of its sample object, then its status over them. It is the
// render cost every reconcile pays (parsing excluded); the performance
// goal is under 100 us for appservice (docs/benchmarks.md).
func BenchmarkRender(b *testing.B) {
	for _, ex := range loadExamples(b) {
		b.Run(ex.name, func(b *testing.B) {
			in := ex.input(ex.object(nil), nil, nil)
			children, err := ex.set.Children(b.Context(), in)
			if err != nil {
				b.Fatal(err)
			}
			live := make([]map[string]any, 0, len(children.Manifests))
			for _, m := range children.Manifests {
				live = append(live, m.Object.Object)
			}
			st := ex.input(ex.object(nil), nil, live)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ex.set.Children(b.Context(), in); err != nil {
					b.Fatal(err)
				}
				if _, err := ex.set.Status(b.Context(), st); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var _ = render.Input{}
