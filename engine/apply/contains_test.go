package apply

import "testing"

func TestContains(t *testing.T) {
	m := func(kv ...any) map[string]any {
		out := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	cases := []struct {
		name          string
		live, desired any
		want          bool
	}{
		{"equal scalars", m("a", int64(1)), m("a", int64(1)), true},
		{"changed scalar", m("a", int64(2)), m("a", int64(1)), false},
		{"live has defaults", m("a", "x", "b", "default"), m("a", "x"), true},
		{"field removed by hand", m("b", "x"), m("a", "x"), false},
		{"empty desired value dropped by server", m(), m("a", map[string]any{}), true},
		{"list elements with defaults", m("l", []any{m("name", "c", "protocol", "TCP")}), m("l", []any{m("name", "c")}), true},
		{"list length differs", m("l", []any{m("name", "c"), m("name", "d")}), m("l", []any{m("name", "c")}), false},
		{"canonical quantity", m("cpu", "500m"), m("cpu", "0.5"), true},
		{"different quantity", m("cpu", "500m"), m("cpu", "1"), false},
		{"type differs", m("a", "1"), m("a", int64(1)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Contains(tc.live, tc.desired); got != tc.want {
				t.Errorf("Contains = %v, want %v", got, tc.want)
			}
		})
	}
}
