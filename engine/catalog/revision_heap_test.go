package catalog

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tmplop/operator/engine/layout"
)

// BenchmarkRevisionHeap measures what a second revision served at once
// costs the operator (docs/rollout.md): the heap of one more compiled
// folder (parsed templates, readiness rules, schemas), kept alive as a
// staged rollout keeps the older revision. A revision only recorded costs
// nothing: records are not held in memory.
//
//	go test ./engine/catalog -run '^$' -bench RevisionHeap -benchtime 200x
func BenchmarkRevisionHeap(b *testing.B) {
	for _, folder := range []string{"memcached", "appservice", "webapp"} {
		b.Run(folder, func(b *testing.B) {
			dir := filepath.Join("..", "..", "templates", folder)
			files, err := layout.Read(os.DirFS(dir))
			if err != nil {
				b.Fatal(err)
			}
			kept := make([]*Kind, 0, b.N)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for range b.N {
				k, err := Compile(folder, dir, files)
				if err != nil {
					b.Fatal(err)
				}
				kept = append(kept, k)
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heapB/revision")
			runtime.KeepAlive(kept)
		})
	}
}
