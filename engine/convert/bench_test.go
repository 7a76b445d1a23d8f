package convert

import (
	"fmt"
	"testing"
)

// BenchmarkConvertList converts a list of 1,000 Memcached objects from
// v1alpha1 to v1, as one ConversionReview brings them; ns/object is the
// cost of one object's conversion (two renders: the conversion and the
// round trip that keeps what v1 cannot hold).
func BenchmarkConvertList(b *testing.B) {
	c := memcached(b, nil)
	in := load(b, "testdata/in/v1alpha1.yaml")
	objs := make([]map[string]any, 1000)
	for i := range objs {
		o := deepCopyMap(in)
		o["metadata"].(map[string]any)["name"] = fmt.Sprintf("cache-%d", i)
		objs[i] = o
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.ConvertList(b.Context(), objs, v1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(objs)), "ns/object")
}

// BenchmarkConvert converts one Memcached from v1alpha1 to v1, as a
// ConversionReview of one object does: what the API server's watch cache
// of a version asks for each object written (docs/versions.md, Figures).
func BenchmarkConvert(b *testing.B) {
	c := memcached(b, nil)
	in := load(b, "testdata/in/v1alpha1.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Convert(b.Context(), in, v1); err != nil {
			b.Fatal(err)
		}
	}
}
