package chart

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/mitchellh/copystructure"
	"sigs.k8s.io/yaml"
)

// allocated is what f allocates, in bytes, averaged over n runs.
func allocated(n int, f func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc-before.TotalAlloc) / int64(n)
}

// TestValuesCostCoversHelm: what Dots charges for one copy of the
// object's values (valuesCost) is at least what Helm's copy of them
// (copystructure, in chartutil.CoalesceValues) allocates, for values of
// every shape a spec takes: wide maps, deep maps, long lists, long
// strings, numbers.
func TestValuesCostCoversHelm(t *testing.T) {
	wide := map[string]any{}
	for i := range 5000 {
		wide[fmt.Sprintf("key-%d", i)] = map[string]any{"a": "b"}
	}
	deep := map[string]any{}
	cur := deep
	for range maxValuesDepth {
		next := map[string]any{}
		cur["x"] = next
		cur = next
	}
	list := make([]any, 20000)
	for i := range list {
		list[i] = int64(i)
	}
	maps := make([]any, 3000)
	for i := range maps {
		maps[i] = map[string]any{"name": fmt.Sprintf("n%d", i), "port": int64(i), "tls": true}
	}
	var yamlValues map[string]any
	if err := yaml.Unmarshal([]byte(strings.Repeat("k: v\n", 1)+`
image: {repository: nginx, tag: "1.27"}
resources: {limits: {cpu: 100m, memory: 128Mi}}
ports: [{port: 80, targetPort: 8080}, {port: 443, targetPort: 8443}]
`), &yamlValues); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		values map[string]any
	}{
		{"wide map of small maps", map[string]any{"global": wide}},
		{"deep map", deep},
		{"list of numbers", map[string]any{"list": list}},
		{"list of maps", map[string]any{"ports": maps}},
		{"long string", map[string]any{"blob": strings.Repeat("x", 1<<20)}},
		{"a spec as YAML decodes it", yamlValues},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cost, ok, _ := valuesCost(tc.values, 1<<40)
			if !ok {
				t.Fatal("over the limit")
			}
			helm := allocated(5, func() {
				if _, err := copystructure.Copy(tc.values); err != nil {
					t.Fatal(err)
				}
			})
			ours := allocated(5, func() { _ = copyValue(tc.values) })
			t.Logf("charged %d bytes; copystructure allocates %d, copyValue %d", cost, helm, ours)
			if cost < helm || cost < ours {
				t.Errorf("charged %d bytes for a copy that allocates %d (copystructure) and %d (copyValue)", cost, helm, ours)
			}
		})
	}
}

// TestValuesCostStopsAtLimit: measuring values stops at the limit, so
// that a spec far larger than the budget costs no more than the budget
// to refuse.
func TestValuesCostStopsAtLimit(t *testing.T) {
	big := map[string]any{}
	for i := range 200000 {
		big[fmt.Sprintf("k%d", i)] = "v"
	}
	const limit = 64 << 10
	cost, ok, _ := valuesCost(big, limit)
	if ok {
		t.Fatalf("%d bytes fit a limit of %d", cost, limit)
	}
	if cost > limit+nodeCost+entryCost+64 {
		t.Errorf("walked to %d bytes, past the limit %d by more than one entry", cost, limit)
	}
}

// TestValuesCostRefusesDeepValues: values nested past maxValuesDepth are
// refused however small, since Helm's copies of them take time that grows
// faster than their size.
func TestValuesCostRefusesDeepValues(t *testing.T) {
	nest := func(depth int) map[string]any {
		root := map[string]any{}
		cur := root
		for range depth {
			next := map[string]any{}
			cur["x"] = next
			cur = next
		}
		return root
	}
	for _, tc := range []struct {
		depth int
		deep  bool
	}{{10, false}, {maxValuesDepth - 1, false}, {maxValuesDepth + 1, true}, {5000, true}} {
		if _, _, deep := valuesCost(nest(tc.depth), 1<<40); deep != tc.deep {
			t.Errorf("values %d deep: deep %v, want %v", tc.depth, deep, tc.deep)
		}
	}
}
