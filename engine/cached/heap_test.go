package cached

import (
	"runtime"
	"testing"
)

// BenchmarkObjectHeap measures what one cached object holds on the heap
// (its JSON and its metadata), for the Deployment an apply returns: what
// an informer keeps per child (docs/performance.md).
//
//	go test ./engine/cached -run '^$' -bench ObjectHeap -benchtime 2000x
func BenchmarkObjectHeap(b *testing.B) {
	data := []byte(appliedDeployment)
	kept := make([]*Object, 0, b.N)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range b.N {
		o, err := Written(data)
		if err != nil {
			b.Fatal(err)
		}
		kept = append(kept, o)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heapB/object")
	b.ReportMetric(float64(len(kept[0].raw)), "jsonB/object")
	runtime.KeepAlive(kept)
}
