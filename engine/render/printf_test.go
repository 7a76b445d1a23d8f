package render

import (
	"fmt"
	"testing"
)

// TestPrintfMatchesFmt: printf prints what fmt.Sprintf prints, and its
// cost bound is never below what it printed.
func TestPrintfMatchesFmt(t *testing.T) {
	h := &holder{}
	printf := funcsFor(h)["printf"].(func(string, ...any) (string, error))
	cases := []struct {
		format string
		args   []any
	}{
		{"%d %s %v", []any{1, "a", []any{1, "b"}}},
		{"%5.2f|%-8s|%08d", []any{3.14159, "ab", 42}},
		{"%*d|%-*d|%.*f", []any{5, 1, 3, 2, 2, 1.5}},
		{"%[2]d %[1]s %[2]*[1]d", []any{"a", 3}},
		{"%[1]*[2]d %[3]v", []any{4, 7, map[string]any{"k": []any{1, 2}}}},
		{"%x %X % x %#x %q %+q %#q", []any{"hé\x00", "ab", "ab", "ab", "\x01é", "é", "`"}},
		{"%b %o %O %U %#U %c", []any{-5, 8, 8, 0x1F600, 'x', 'y'}},
		{"%f %e %g", []any{1e308, 1e-300, 1e21}},
		{"%#v %+v", []any{map[string]any{"a": []any{1, "x", nil}}, []any{true}}},
		{"%5v", []any{[]any{1, []any{2, 3}, map[string]any{"a": "b"}}}},
		{"%d %d", []any{1}},
		{"%d", []any{1, 2, "extra"}},
		{"%!", nil},
		{"%", nil},
		{"%[5]d %[x]d %[0]d %.", []any{1}},
		{"%*d", []any{"w", 1}},
		{"%-*d", []any{-4, 1}},
		{"%.*d", []any{-4, 1}},
		{"%%%d%%", []any{7}},
	}
	for _, tc := range cases {
		h.st = newRenderState(Input{}, Budget{}.WithDefaults())
		got, err := printf(tc.format, tc.args...)
		if want := fmt.Sprintf(tc.format, tc.args...); err != nil || got != want {
			t.Errorf("printf %q %v = %q, %v; want %q", tc.format, tc.args, got, err, want)
		}
		c, err := formatCost(&h.st.meter, tc.format, tc.args)
		if err != nil || c.bytes < int64(len(got)) {
			t.Errorf("printf %q: cost %d, %v for %d bytes printed", tc.format, c.bytes, err, len(got))
		}
	}
}

// FuzzFormatCost: formatCost is never below what fmt.Sprintf prints, for
// any format over arguments of every shape.
func FuzzFormatCost(f *testing.F) {
	for _, format := range []string{"%d %s %v", "%[2]*[1]d", "%-*.*f", "%x %q %#v", "%5v", "%[3]v%[1]s", "%!", "%.*[2]d", "%b %o %U %c"} {
		f.Add(format, int64(7), "é\x00<")
	}
	f.Fuzz(func(t *testing.T, format string, n int64, s string) {
		args := []any{n, s, []any{n, s, map[string]any{"k": []any{1.5e300, true, nil}}}, -n, 1e308}
		h := &holder{st: newRenderState(Input{}, Budget{}.WithDefaults())}
		c, err := formatCost(&h.st.meter, format, args)
		if err != nil || c.bytes > 4<<20 {
			return // refused: fmt never runs
		}
		if out := fmt.Sprintf(format, args...); int64(len(out)) > c.bytes {
			t.Fatalf("printf %q: cost %d, printed %d bytes", format, c.bytes, len(out))
		}
	})
}
