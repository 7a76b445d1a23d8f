package webhook

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/tmplop/operator/engine/convert"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

// BenchmarkConvertReviewTemplates: a ConversionReview through the handler
// (JSON decode, the conversion templates of engine/convert's Memcached,
// JSON encode), of one object (what the API server's watch cache of a
// version sends for each object written) and of 1,000 (a list read past
// the cache); ns/object beside BenchmarkConvert and BenchmarkConvertList
// of engine/convert is what the handler adds to the render.
func BenchmarkConvertReviewTemplates(b *testing.B) {
	files, err := layout.Read(os.DirFS("../convert/testdata/memcached"))
	if err != nil {
		b.Fatal(err)
	}
	templates := files.Conversions()
	for name, text := range files.Templates() {
		templates[name] = text
	}
	conv, err := convert.Compile("v1", []string{"v1alpha1", "v1"}, nil, templates, render.Budget{})
	if err != nil {
		b.Fatal(err)
	}
	h := NewHandler(converters{memcached: conv}, 0, nil)
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			objs := make([]map[string]any, n)
			for i := range objs {
				o := object("cache.example.com/v1alpha1", "Memcached", fmt.Sprintf("memcached-%04d", i), int64(i%5))
				md := o["metadata"].(map[string]any)
				md["labels"] = map[string]any{"app.kubernetes.io/name": "memcached", "team": "platform"}
				md["resourceVersion"], md["generation"], md["creationTimestamp"] = "123456", int64(3), "2026-11-28T10:00:00Z"
				o["spec"].(map[string]any)["image"] = "memcached:1.6"
				objs[i] = o
			}
			body := reviewBody(b, "apiextensions.k8s.io/v1", "cache.example.com/v1", objs...)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, ConvertPath, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"status":"Success"`)) {
					b.Fatal(rec.Body)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
		})
	}
}
