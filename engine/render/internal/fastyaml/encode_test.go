package fastyaml

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	_ "unsafe" // go:linkname, for yaml.v2's own key order

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// yamlv2KeyLess is yaml.v2's own comparison of mapping keys, the oracle of
// keyLess: the method of its unexported keyList, called as a function.
//
//go:linkname yamlv2KeyLess go.yaml.in/yaml/v2.keyList.Less
func yamlv2KeyLess(l []reflect.Value, i, j int) bool

var _ = yamlv2.MapSlice{} // the oracle's package is linked in

func v2Less(a, b string) bool {
	return yamlv2KeyLess([]reflect.Value{reflect.ValueOf(a), reflect.ValueOf(b)}, 0, 1)
}

// notAnOrder is whether yaml.v2's comparison is no strict total order on
// keys: two keys it cannot tell apart, or three in a cycle. There
// sort.Sort's result depends on the order it starts from, which is a Go
// map's random one, so sigs.k8s.io/yaml has no one answer to compare with.
func notAnOrder(keys []string) bool {
	for _, a := range keys {
		for _, b := range keys {
			if a == b {
				continue
			}
			if !v2Less(a, b) && !v2Less(b, a) {
				return true
			}
			for _, c := range keys {
				if v2Less(a, b) && v2Less(b, c) && !v2Less(a, c) {
					return true
				}
			}
		}
	}
	return false
}

// unordered is whether some mapping in v (a value as sigs.k8s.io/yaml
// encodes it: its JSON, keys made valid UTF-8) has keys notAnOrder.
func unordered(v any) bool {
	j, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var back any
	if yamlv2.Unmarshal(j, &back) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case []any:
			return slices.ContainsFunc(x, walk)
		case map[any]any:
			keys := make([]string, 0, len(x))
			for k, e := range x {
				keys = append(keys, k.(string))
				if walk(e) {
					return true
				}
			}
			return len(keys) < 40 && notAnOrder(keys)
		}
		return false
	}
	return walk(back)
}

// compareEncoders checks that Marshal writes what sigs.k8s.io/yaml's
// Marshal (Helm's toYaml) writes, for the value data decodes to, and the
// same text each time.
func compareEncoders(t *testing.T, data []byte) {
	t.Helper()
	v, err := Decode(data)
	if err != nil {
		return
	}
	for _, in := range []any{v, map[string]any{"k": v}, []any{v, 1.5, 2.0, int64(1) << 62, 1e21, 1e-7, -0.0}} {
		want, werr := yaml.Marshal(in)
		got, gerr := Marshal(in)
		for range 3 { // a Go map's iteration order changes with each range
			again, _ := Marshal(in)
			if string(again) != string(got) {
				t.Fatalf("%#v: Marshal wrote %q, then %q", in, got, again)
			}
		}
		if werr != nil && gerr == nil {
			// sigs.k8s.io/yaml refuses strings with control characters
			// (its JSON-to-YAML step re-parses them); escaped, they are
			// valid YAML, so what we write must read back as it was.
			// Compared as JSON: 2.0 reads back as the integer 2.
			back, err := Decode(got)
			bj, _ := json.Marshal(back)
			ij, _ := json.Marshal(in)
			if err != nil || string(bj) != string(ij) {
				t.Fatalf("%#v: sigs.k8s.io/yaml refuses it (%v); Marshal wrote %q, which reads back as %#v (%v)", in, werr, got, back, err)
			}
			continue
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%#v:\nsigs.k8s.io/yaml %q (%v)\nMarshal          %q (%v)", in, want, werr, got, gerr)
		}
		if string(want) == string(got) {
			continue
		}
		if !unordered(in) {
			t.Fatalf("%#v:\nsigs.k8s.io/yaml %q (%v)\nMarshal          %q (%v)", in, want, werr, got, gerr)
		}
		// yaml.v2's order is none here: the text must still be the same
		// value, in the fixed order Marshal chose.
		back, err := Decode(got)
		wback, _ := Decode(want)
		bj, _ := json.Marshal(back)
		wj, _ := json.Marshal(wback)
		if err != nil || string(bj) != string(wj) {
			t.Fatalf("%#v: sigs.k8s.io/yaml %q, Marshal %q, another value (%v)", in, want, got, err)
		}
	}
}

func TestMarshalYAMLMatches(t *testing.T) {
	for _, s := range decodeSeeds {
		compareEncoders(t, []byte(s))
	}
}

// FuzzMarshalYAML: for any decoded document, Marshal writes what
// sigs.k8s.io/yaml writes, and always the same.
func FuzzMarshalYAML(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { compareEncoders(t, data) })
}

// keyLessSeeds: keys where yaml.v2's comparison is not byte order.
var keyLessSeeds = [][2]string{
	{"001A", "0C2"}, {"0C2", "1"}, {"1", "001A"}, {"a10", "a9"}, {"a_b", "aB"},
	{"_", "A"}, {"-", "0"}, {"01", "1"}, {"x0", "x00"}, {"é", "z"}, {"١", "2"},
	{"99999999999999999999", "1"}, {"a/b", "a.b"}, {"", "a"}, {"Z", "a"},
}

func TestKeyLess(t *testing.T) {
	for _, p := range keyLessSeeds {
		for _, q := range [][2]string{p, {p[1], p[0]}} {
			if got, want := keyLess(q[0], q[1]), v2Less(q[0], q[1]); got != want {
				t.Errorf("keyLess(%q, %q) = %v, yaml.v2 %v", q[0], q[1], got, want)
			}
		}
	}
}

// FuzzKeyLess: keyLess is yaml.v2's comparison for any two keys.
func FuzzKeyLess(f *testing.F) {
	for _, p := range keyLessSeeds {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := keyLess(a, b), v2Less(a, b); got != want {
			t.Fatalf("keyLess(%q, %q) = %v, yaml.v2 %v", a, b, got, want)
		}
	})
}

// TestMarshalKeysNoOrder: keys on which yaml.v2's comparison is a cycle,
// the fuzz find among them. sigs.k8s.io/yaml writes them in one
// of several orders, a different one from call to call; Marshal writes
// one, always the same, whatever order the map is built in.
func TestMarshalKeysNoOrder(t *testing.T) {
	for _, keys := range [][]string{
		{"001A", "0C2", "1"},
		{"1", "0C2", "001A", "a", "02b", "0a"},
	} {
		if !notAnOrder(keys) {
			t.Fatalf("%q: yaml.v2 orders these keys; the test needs keys it cannot", keys)
		}
		var first string
		for i := range 50 {
			m := map[string]any{}
			for j := range keys {
				k := (i + j) % len(keys)
				m[keys[k]] = k
			}
			got, err := Marshal(map[string]any{"nested": []any{m}})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = string(got)
			} else if string(got) != first {
				t.Fatalf("%q: Marshal wrote %q, then %q", keys, first, got)
			}
		}
	}
}

// TestMarshalInvalidUTF8Keys: keys that JSON makes one keep the value of
// the last in byte order, as sigs.k8s.io/yaml does.
func TestMarshalInvalidUTF8Keys(t *testing.T) {
	in := map[string]any{"a\xff": 1, "a\xfe": 2, "a\ufffd": 3, "b": 4}
	want, err := yaml.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		got, err := Marshal(in)
		if err != nil || string(got) != string(want) {
			t.Fatalf("Marshal %q (%v), sigs.k8s.io/yaml %q", got, err, want)
		}
	}
}

// TestMarshalFallback: values that are not JSON's own (a struct, typed
// maps) take the JSON path, in the same fixed order.
func TestMarshalFallback(t *testing.T) {
	type pair struct {
		B string `json:"b"`
		A []int  `json:"1"`
	}
	for _, in := range []any{
		pair{B: "x", A: []int{1, 2}},
		map[string]string{"a10": "x", "a9": "y", "_": "z"},
		map[string]any{"k": map[string]int{"001A": 1, "0C2": 2, "1": 3}},
	} {
		got, err := Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := yaml.Marshal(in)
		if string(got) != string(want) && !unordered(in) {
			t.Errorf("%#v: Marshal %q, sigs.k8s.io/yaml %q", in, got, want)
		}
		for range 10 {
			if again, _ := Marshal(in); string(again) != string(got) {
				t.Fatalf("%#v: Marshal wrote %q, then %q", in, got, again)
			}
		}
	}
}
