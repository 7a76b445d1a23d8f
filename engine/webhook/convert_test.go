package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

var memcached = schema.GroupKind{Group: "cache.example.com", Kind: "Memcached"}

// converters serves one Converter per kind.
type converters map[schema.GroupKind]Converter

func (c converters) Converter(gk schema.GroupKind) Converter { return c[gk] }

// renameConverter sets apiVersion, and renames spec.size to
// spec.replicas (v1alpha1 -> v1) or back; it counts its calls. A name in
// fail makes it fail at that object with an indexed error.
type renameConverter struct {
	calls atomic.Int64 // servers call it from several connections
	fail  string
	bare  bool // fail with an error that does not name the object
}

type indexedErr struct {
	i   int
	err error
}

func (e indexedErr) Error() string    { return e.err.Error() }
func (e indexedErr) ObjectIndex() int { return e.i }

func (c *renameConverter) ConvertList(_ context.Context, objs []map[string]any, to string) ([]map[string]any, error) {
	c.calls.Add(1)
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		if c.fail != "" && objectName(o) == c.fail {
			err := errors.New(`convert.v1alpha1.v1.yaml:3: template: executing "convert.v1alpha1.v1.yaml": spec.size is not a number`)
			if c.bare {
				return nil, err
			}
			return nil, indexedErr{i, err}
		}
		n := map[string]any{}
		for k, v := range o {
			n[k] = v
		}
		n["apiVersion"] = to
		if spec, ok := o["spec"].(map[string]any); ok {
			s := map[string]any{}
			for k, v := range spec {
				s[k] = v
			}
			if strings.HasSuffix(to, "/v1") {
				s["replicas"], s["size"] = s["size"], nil
				delete(s, "size")
			}
			n["spec"] = s
		}
		out[i] = n
	}
	return out, nil
}

func object(apiVersion, kind, name string, size int64) map[string]any {
	return map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "default", "uid": "u-" + name},
		"spec":     map[string]any{"size": size},
	}
}

func reviewBody(t testing.TB, apiVersion, to string, objs ...map[string]any) []byte {
	t.Helper()
	raws := make([]runtime.RawExtension, len(objs))
	for i, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		raws[i] = runtime.RawExtension{Raw: b}
	}
	review := apiextensionsv1.ConversionReview{
		Request: &apiextensionsv1.ConversionRequest{UID: types.UID("review-1"), DesiredAPIVersion: to, Objects: raws},
	}
	review.APIVersion, review.Kind = apiVersion, "ConversionReview"
	b, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// observed records what an Observer is told.
type observed struct {
	mu    sync.Mutex
	calls []string
}

func (o *observed) ObserveConversion(kind, result string, objects int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, fmt.Sprintf("%s %s %d", kind, result, objects))
}

func TestConvertReview(t *testing.T) {
	v1alpha1, v1 := "cache.example.com/v1alpha1", "cache.example.com/v1"
	a, b, c := object(v1alpha1, "Memcached", "a", 1), object(v1alpha1, "Memcached", "b", 2), object(v1alpha1, "Memcached", "c", 3)
	review := func(objs ...map[string]any) []byte { return reviewBody(t, "apiextensions.k8s.io/v1", v1, objs...) }
	cases := []struct {
		name        string
		contentType string
		body        []byte
		conv        *renameConverter
		maxBody     int64
		wantCode    int
		wantStatus  string // the review's result: Success or Failure ("" for a 4xx)
		wantMsg     []string
		wantNames   []string
		wantCalls   int
		wantObserve string
	}{
		{name: "success, in order, one pass", body: review(a, b, c), wantCode: 200, wantStatus: "Success",
			wantNames: []string{"a", "b", "c"}, wantCalls: 1, wantObserve: "Memcached.cache.example.com success 3"},
		{name: "content type with parameters", contentType: "application/json; charset=utf-8", body: review(a), wantCode: 200,
			wantStatus: "Success", wantNames: []string{"a"}, wantCalls: 1, wantObserve: "Memcached.cache.example.com success 1"},
		{name: "no objects", body: review(), wantCode: 200, wantStatus: "Success", wantObserve: " success 0"},
		{name: "the converter fails: object and template named", body: review(a, b, c), conv: &renameConverter{fail: "default/b"},
			wantCode: 200, wantStatus: "Failure", wantCalls: 1,
			wantMsg:     []string{"Memcached default/b (object 2 of 3) to cache.example.com/v1", "convert.v1alpha1.v1.yaml:3"},
			wantObserve: "Memcached.cache.example.com failure 3"},
		{name: "the converter fails without naming the object", body: review(a, b), conv: &renameConverter{fail: "default/b", bare: true},
			wantCode: 200, wantStatus: "Failure", wantCalls: 1,
			wantMsg:     []string{"convert 2 Memcached objects to cache.example.com/v1", "convert.v1alpha1.v1.yaml:3"},
			wantObserve: "Memcached.cache.example.com failure 2"},
		{name: "mixed kinds", body: review(a, object(v1alpha1, "Other", "x", 1)), wantCode: 200, wantStatus: "Failure",
			wantMsg:     []string{"object 2 of 2 (default/x) is a Other.cache.example.com, object 1 a Memcached.cache.example.com: a ConversionReview holds objects of one kind"},
			wantObserve: " invalid 2"},
		{name: "unknown kind", body: review(object("other.example.com/v1", "Other", "x", 1)), wantCode: 200, wantStatus: "Failure",
			wantMsg: []string{"kind Other.other.example.com: this operator has no conversion for it"}, wantObserve: " invalid 1"},
		{name: "another group", body: reviewBody(t, "apiextensions.k8s.io/v1", "other.example.com/v1", a), wantCode: 200, wantStatus: "Failure",
			wantMsg: []string{"cannot be converted to other.example.com/v1"}, wantObserve: " invalid 1"},
		{name: "bad content type", contentType: "application/yaml", body: review(a), wantCode: 400,
			wantMsg: []string{`content type "application/yaml": the conversion webhook reads application/json`}, wantObserve: " invalid 0"},
		{name: "bad review version", body: reviewBody(t, "apiextensions.k8s.io/v1beta1", v1, a), wantCode: 400,
			wantMsg: []string{"ConversionReview apiextensions.k8s.io/v1beta1: the conversion webhook reads ConversionReview apiextensions.k8s.io/v1 only"}, wantObserve: " invalid 0"},
		{name: "not JSON", body: []byte("{"), wantCode: 400, wantMsg: []string{"decode the ConversionReview"}, wantObserve: " invalid 0"},
		{name: "no request", body: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`), wantCode: 400,
			wantMsg: []string{"without a request"}, wantObserve: " invalid 0"},
		{name: "body too large", body: review(a, b, c), maxBody: 100, wantCode: 413,
			wantMsg: []string{"over the webhook's body limit of 100"}, wantObserve: " invalid 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conv := tc.conv
			if conv == nil {
				conv = &renameConverter{}
			}
			obs := &observed{}
			h := NewHandler(converters{memcached: conv}, tc.maxBody, obs)
			for _, chunked := range []bool{false, true} {
				obs.calls = nil
				conv.calls.Store(0)
				req := httptest.NewRequest(http.MethodPost, ConvertPath, bytes.NewReader(tc.body))
				if chunked {
					req.ContentLength = -1 // the limit holds without a Content-Length too
				}
				ct := tc.contentType
				if ct == "" {
					ct = "application/json"
				}
				req.Header.Set("Content-Type", ct)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != tc.wantCode {
					t.Fatalf("code %d, want %d: %s", rec.Code, tc.wantCode, rec.Body)
				}
				msg := rec.Body.String()
				if tc.wantStatus != "" {
					var out apiextensionsv1.ConversionReview
					if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
						t.Fatal(err)
					}
					if out.APIVersion != "apiextensions.k8s.io/v1" || out.Kind != "ConversionReview" || out.Response == nil || out.Response.UID != "review-1" {
						t.Fatalf("response %s", rec.Body)
					}
					if out.Response.Result.Status != tc.wantStatus {
						t.Fatalf("result %+v, want %s", out.Response.Result, tc.wantStatus)
					}
					msg = out.Response.Result.Message
					var names []string
					for _, raw := range out.Response.ConvertedObjects {
						var o map[string]any
						if err := json.Unmarshal(raw.Raw, &o); err != nil {
							t.Fatal(err)
						}
						if o["apiVersion"] != v1 || o["spec"].(map[string]any)["replicas"] == nil {
							t.Errorf("converted %v", o)
						}
						names = append(names, objectName(o)[len("default/"):])
					}
					if strings.Join(names, ",") != strings.Join(tc.wantNames, ",") {
						t.Errorf("converted %v, want %v", names, tc.wantNames)
					}
				}
				for _, want := range tc.wantMsg {
					if !strings.Contains(msg, want) {
						t.Errorf("message %q does not contain %q", msg, want)
					}
				}
				if conv.calls.Load() != int64(tc.wantCalls) {
					t.Errorf("%d ConvertList calls, want %d", conv.calls.Load(), tc.wantCalls)
				}
				if len(obs.calls) != 1 || obs.calls[0] != tc.wantObserve {
					t.Errorf("observed %q, want [%q]", obs.calls, tc.wantObserve)
				}
			}
		})
	}
}

// TestConvertKeepsIntegers: numbers keep their integer type both ways
// (a template sees 3, not 3.0, and 2^53+1 is not rounded).
func TestConvertKeepsIntegers(t *testing.T) {
	var seen any
	conv := convFunc(func(_ context.Context, objs []map[string]any, to string) ([]map[string]any, error) {
		seen = objs[0]["spec"].(map[string]any)["size"]
		objs[0]["apiVersion"] = to
		return objs, nil
	})
	h := NewHandler(converters{memcached: conv}, 0, nil)
	big := int64(1<<53 + 1)
	req := httptest.NewRequest(http.MethodPost, ConvertPath, bytes.NewReader(
		reviewBody(t, "apiextensions.k8s.io/v1", "cache.example.com/v1", object("cache.example.com/v1alpha1", "Memcached", "a", big))))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if seen != big {
		t.Errorf("the converter saw %#v, want int64 %d", seen, big)
	}
	if !strings.Contains(rec.Body.String(), `"size":9007199254740993`) {
		t.Errorf("answered %s", rec.Body)
	}
}

// TestConvertPanic: a converter's panic fails its request with a Failure.
func TestConvertPanic(t *testing.T) {
	conv := convFunc(func(context.Context, []map[string]any, string) ([]map[string]any, error) { panic("boom") })
	h := NewHandler(converters{memcached: conv}, 0, nil)
	req := httptest.NewRequest(http.MethodPost, ConvertPath, bytes.NewReader(
		reviewBody(t, "apiextensions.k8s.io/v1", "cache.example.com/v1", object("cache.example.com/v1alpha1", "Memcached", "a", 1))))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), `"status":"Failure","message":"convert Memcached default/a to cache.example.com/v1: panic: boom"`) {
		t.Errorf("answered %d %s", rec.Code, rec.Body)
	}
}

type convFunc func(context.Context, []map[string]any, string) ([]map[string]any, error)

func (f convFunc) ConvertList(ctx context.Context, objs []map[string]any, to string) ([]map[string]any, error) {
	return f(ctx, objs, to)
}

// BenchmarkConvertReview: a ConversionReview of 1,000 objects through the
// handler with a Converter that only sets apiVersion: what the webhook
// costs beyond the conversion itself (decode, check, encode).
func BenchmarkConvertReview(b *testing.B) {
	objs := make([]map[string]any, 1000)
	for i := range objs {
		o := object("cache.example.com/v1alpha1", "Memcached", fmt.Sprintf("memcached-%04d", i), int64(i))
		md := o["metadata"].(map[string]any)
		md["labels"] = map[string]any{"app.kubernetes.io/name": "memcached", "team": "platform"}
		md["resourceVersion"], md["generation"], md["creationTimestamp"] = "123456", int64(3), "2026-11-28T10:00:00Z"
		o["spec"].(map[string]any)["image"] = "memcached:1.6"
		o["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready",
			"lastTransitionTime": "2026-11-28T10:00:00Z", "observedGeneration": int64(3)}}}
		objs[i] = o
	}
	body := reviewBody(b, "apiextensions.k8s.io/v1", "cache.example.com/v1", objs...)
	conv := convFunc(func(_ context.Context, objs []map[string]any, to string) ([]map[string]any, error) {
		for _, o := range objs {
			o["apiVersion"] = to
		}
		return objs, nil
	})
	h := NewHandler(converters{memcached: conv}, 0, nil)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, ConvertPath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Body)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/object")
}

// BenchmarkJSONFloor: what decoding each of BenchmarkConvertReview's
// objects into a map and encoding it again costs, with no review around
// them: the floor of any webhook whose Converter takes maps.
func BenchmarkJSONFloor(b *testing.B) {
	o := object("cache.example.com/v1alpha1", "Memcached", "memcached-0001", 1)
	md := o["metadata"].(map[string]any)
	md["labels"] = map[string]any{"app.kubernetes.io/name": "memcached", "team": "platform"}
	md["resourceVersion"], md["generation"], md["creationTimestamp"] = "123456", int64(3), "2026-11-28T10:00:00Z"
	o["spec"].(map[string]any)["image"] = "memcached:1.6"
	o["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready",
		"lastTransitionTime": "2026-11-28T10:00:00Z", "observedGeneration": int64(3)}}}
	raw, err := json.Marshal(o)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var m map[string]any
		if err := utiljson.Unmarshal(raw, &m); err != nil {
			b.Fatal(err)
		}
		if _, err := utiljson.Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}
