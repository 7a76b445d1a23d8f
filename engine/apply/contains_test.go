package apply

import (
	"slices"
	"testing"
)

func TestContains(t *testing.T) {
	for _, tc := range containsCases() {
		t.Run(tc.name, func(t *testing.T) {
			if got := Contains(tc.live, tc.desired); got != tc.want {
				t.Errorf("Contains = %v, want %v", got, tc.want)
			}
		})
	}
}

type containsCase struct {
	name          string
	live, desired any
	want          bool
	// paths are DriftPaths(live, desired).
	paths []string
}

func m(kv ...any) map[string]any {
	out := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func containsCases() []containsCase {
	return []containsCase{
		{"equal scalars", m("a", int64(1)), m("a", int64(1)), true, nil},
		{"changed scalar", m("a", int64(2)), m("a", int64(1)), false, []string{"/a"}},
		{"live has defaults", m("a", "x", "b", "default"), m("a", "x"), true, nil},
		{"field removed by hand", m("b", "x"), m("a", "x"), false, []string{"/a"}},
		{"empty desired value dropped by server", m(), m("a", map[string]any{}), true, nil},
		{"list elements with defaults", m("l", []any{m("name", "c", "protocol", "TCP")}), m("l", []any{m("name", "c")}), true, nil},
		{"list length differs", m("l", []any{m("name", "c"), m("name", "d")}), m("l", []any{m("name", "c")}), false, []string{"/l"}},
		{"list item changed", m("l", []any{m("name", "c"), m("name", "x", "image", "b")}), m("l", []any{m("name", "c"), m("name", "d", "image", "a")}), false,
			[]string{"/l/1/image", "/l/1/name"}},
		{"empty list, null live", m("rules", nil), m("rules", []any{}), true, nil},
		{"empty map, null live", m("data", nil), m("data", map[string]any{}), true, nil},
		{"list, null live", m("rules", nil), m("rules", []any{"a"}), false, []string{"/rules"}},
		{"canonical quantity", m("cpu", "500m"), m("cpu", "0.5"), true, nil},
		{"different quantity", m("cpu", "500m"), m("cpu", "1"), false, []string{"/cpu"}},
		{"type differs", m("a", "1"), m("a", int64(1)), false, []string{"/a"}},
		{"map became a scalar", m("spec", "x"), m("spec", m("a", int64(1))), false, []string{"/spec"}},
		{"nested, sorted", m("data", m("b", "2", "a", "0", "c", "3")), m("data", m("c", "3", "b", "1", "a", "1")), false, []string{"/data/a", "/data/b"}},
		{"keys escaped", m("metadata", m("annotations", m("a/b", "x", "t~1", "y"))), m("metadata", m("annotations", m("a/b", "z", "t~1", "w"))), false,
			[]string{"/metadata/annotations/a~1b", "/metadata/annotations/t~01"}},
	}
}

// TestDriftPaths: DriftPaths names where Contains says no, as JSON
// pointers, and nothing where it says yes.
func TestDriftPaths(t *testing.T) {
	for _, tc := range containsCases() {
		t.Run(tc.name, func(t *testing.T) {
			got := DriftPaths(tc.live, tc.desired)
			if !slices.Equal(got, tc.paths) {
				t.Errorf("DriftPaths = %q, want %q", got, tc.paths)
			}
			if (len(got) == 0) != Contains(tc.live, tc.desired) {
				t.Errorf("DriftPaths = %q but Contains = %v", got, Contains(tc.live, tc.desired))
			}
		})
	}
}
