package convert

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/tmplop/operator/engine/render"
)

// threeVersions is a kind of hub v2 whose conversions drop, add and
// rename fields, of spec, status and labels:
//   - v1 -> v2 drops spec.legacy, adds spec.added and a label;
//   - v2 -> v1 drops spec.added and status.v2only, and the label;
//   - v3 -> v2 renames spec.a to spec.b and drops the whole status;
//   - v2 -> v3 renames spec.b to spec.a and drops spec.added.
var threeVersions = map[string]string{
	"convert.v1.v2.yaml": `{{- $s := omit .Spec "legacy" }}{{ $_ := set $s "added" "default" }}
{{- $m := deepCopy .Object.metadata }}{{ $l := default dict $m.labels }}{{ $_ := set $l "tier" "v2" }}{{ $_ := set $m "labels" $l }}
metadata: {{ toJson $m }}
spec: {{ toJson $s }}
{{- if hasKey .Object "status" }}
status: {{ toJson .Status }}
{{- end }}`,
	"convert.v2.v1.yaml": `{{- $m := deepCopy .Object.metadata }}{{ if $m.labels }}{{ $_ := unset $m.labels "tier" }}{{ end }}
metadata: {{ toJson $m }}
spec: {{ toJson (omit .Spec "added") }}
{{- if hasKey .Object "status" }}
status: {{ toJson (omit .Status "v2only") }}
{{- end }}`,
	"convert.v3.v2.yaml": `{{- $s := omit .Spec "a" }}{{ if hasKey .Spec "a" }}{{ $_ := set $s "b" .Spec.a }}{{ end }}
spec: {{ toJson $s }}`,
	"convert.v2.v3.yaml": `{{- $s := omit .Spec "b" "added" }}{{ if hasKey .Spec "b" }}{{ $_ := set $s "a" .Spec.b }}{{ end }}
spec: {{ toJson $s }}`,
}

// TestRoundTrip: for random objects, converting from any version A to any
// other B and back gives back the object exactly (labels and annotations
// included), for conversions that drop, add and rename fields, directly
// and through the hub. A failure prints the seed; ROUNDTRIP_SEED replays it.
func TestRoundTrip(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("ROUNDTRIP_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	three, err := Compile("v2", []string{"v1", "v3"}, nil, threeVersions, render.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []struct {
		name     string
		c        *Converter
		group    string
		versions []string
	}{
		{"memcached", memcached(t, nil), "cache.example.com", []string{"v1alpha1", "v1"}},
		{"three", three, "x.example.com", []string{"v1", "v2", "v3"}},
	}
	n := 300
	if testing.Short() {
		n = 50
	}
	for _, k := range kinds {
		for i := range n {
			for _, a := range k.versions {
				obj := randomObject(r, k.group+"/"+a)
				for _, b := range k.versions {
					if a == b {
						continue
					}
					at, err := k.c.Convert(t.Context(), obj, k.group+"/"+b)
					if err != nil {
						t.Fatalf("%s #%d %s -> %s (seed %d): %v\n%v", k.name, i, a, b, seed, err, obj)
					}
					back, err := k.c.Convert(t.Context(), at, k.group+"/"+a)
					if err != nil {
						t.Fatalf("%s #%d %s -> %s -> %s (seed %d): %v\n%v", k.name, i, a, b, a, seed, err, at)
					}
					if !equal(back, obj) {
						t.Fatalf("%s #%d %s -> %s -> %s (seed %d) is not the identity:\n  in %v\n  at %v\nback %v", k.name, i, a, b, a, seed, obj, at, back)
					}
					// And again: what is kept is the same each time.
					again, err := k.c.Convert(t.Context(), back, k.group+"/"+b)
					if err != nil {
						t.Fatal(err)
					}
					if !equal(again, at) {
						t.Fatalf("%s #%d %s -> %s twice (seed %d) differs:\n first %v\nsecond %v", k.name, i, a, b, seed, at, again)
					}
				}
			}
		}
	}
}

// keys are the keys of random objects: the fields the conversions touch,
// others, and keys that JSON Pointers escape.
var keys = []string{"size", "replicas", "maxConnections", "legacy", "added", "a", "b", "v2only", "x", "y/z", "t~1", "~", "ünï", "tier", "0"}

func randomObject(r *rand.Rand, apiVersion string) map[string]any {
	meta := map[string]any{"name": "o" + strconv.Itoa(r.IntN(100)), "namespace": "ns", "uid": "u", "generation": int64(r.IntN(9) + 1)}
	// Never empty: the API server stores no empty labels or annotations,
	// and a conversion reads them as absent.
	for _, f := range []string{"labels", "annotations"} {
		if r.IntN(2) == 0 {
			m := map[string]any{}
			for range 1 + r.IntN(3) {
				m[keys[r.IntN(len(keys))]] = randomString(r)
			}
			meta[f] = m
		}
	}
	obj := map[string]any{"apiVersion": apiVersion, "kind": "Memcached", "metadata": meta}
	for _, f := range []string{"spec", "status"} {
		if r.IntN(4) > 0 {
			obj[f] = randomMap(r, 3)
		}
	}
	return obj
}

func randomMap(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range r.IntN(6) {
		m[keys[r.IntN(len(keys))]] = randomValue(r, depth-1)
	}
	return m
}

func randomValue(r *rand.Rand, depth int) any {
	n := 7
	if depth <= 0 {
		n = 5
	}
	switch r.IntN(n) {
	case 0:
		return randomString(r)
	case 1:
		return []int64{0, 1, -1, math.MaxInt64, math.MinInt64, r.Int64()}[r.IntN(6)]
	case 2:
		return []float64{0.5, -2.25, 1e300, 3.0e-5}[r.IntN(4)]
	case 3:
		return r.IntN(2) == 0
	case 4:
		return nil
	case 5:
		l := make([]any, r.IntN(3))
		for i := range l {
			l[i] = randomValue(r, depth-1)
		}
		return l
	}
	return randomMap(r, depth)
}

func randomString(r *rand.Rand) string {
	return []string{"", "a", "true", "1", "null", "a: b", "- x", "{x}", "é\n\t\"'", fmt.Sprint(r.Int())}[r.IntN(10)]
}
