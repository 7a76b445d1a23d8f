package render

import (
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/tmplop/operator/engine/render/internal/budget"
)

// The string functions below replace sprig's where one call, or a few
// calls in a loop, can build a string far larger than its inputs: they
// refuse before allocating what would not fit the output budget, and
// charge what they return. Every other function that returns a string is
// charged for it (wrapGeneric), so any chain of string operations that
// grows its input (b64enc in a loop, cat doubling a string) stops at the
// budget.

func stringFuncs(h *holder, base template.FuncMap) template.FuncMap {
	sprigRepeat := base["repeat"].(func(int, string) string)
	return template.FuncMap{
		"seq": func(params ...int) (string, error) {
			return budget.Bounded(h.meter(), 21*seqCount(params), func() string { return fmt.Sprintf("seq %v", params) },
				func() (string, error) { return base["seq"].(func(...int) string)(params...), nil }, strCost)
		},
		"repeat": func(count int, s string) (string, error) {
			if count < 0 {
				return "", funcErrorf("repeat: negative count %d", count)
			}
			return budget.Bounded(h.meter(), budget.MulSat(int64(count), int64(len(s))), func() string { return fmt.Sprintf("repeat %d of %d bytes", count, len(s)) },
				func() (string, error) { return sprigRepeat(count, s), nil }, strCost)
		},
		"indent":  func(n int, s string) (string, error) { return indent(h.meter(), "indent", n, s, false) },
		"nindent": func(n int, s string) (string, error) { return indent(h.meter(), "nindent", n, s, true) },
		"replace": func(old, repl, s string) (string, error) {
			n := int64(strings.Count(s, old))
			if old == "" {
				n = int64(utf8.RuneCountInString(s)) + 1
			}
			size := int64(len(s)) + budget.MulSat(n, int64(len(repl)-len(old)))
			return budget.Bounded(h.meter(), size, func() string { return fmt.Sprintf("replace in %d bytes", len(s)) },
				func() (string, error) { return strings.ReplaceAll(s, old, repl), nil }, strCost)
		},
		"wrap": func(n int, s string) (string, error) {
			return wrapWith(h.meter(), "wrap", n, "\n", s, func() string { return base["wrap"].(func(int, string) string)(n, s) })
		},
		"wrapWith": func(n int, with, s string) (string, error) {
			return wrapWith(h.meter(), "wrapWith", n, with, s, func() string { return base["wrapWith"].(func(int, string, string) string)(n, with, s) })
		},
		"randAlpha":    randN(h, "randAlpha", base),
		"randAlphaNum": randN(h, "randAlphaNum", base),
		"randAscii":    randN(h, "randAscii", base),
		"randNumeric":  randN(h, "randNumeric", base),
		"randBytes": func(n int) (string, error) {
			return budget.Bounded(h.meter(), 2*int64(max(n, 0)), func() string { return "randBytes " + strconv.Itoa(n) },
				func() (string, error) { return base["randBytes"].(func(int) (string, error))(n) }, strCost)
		},
	}
}

// randN wraps randAlpha and its siblings, which draw a big.Int for every
// character and more (randNumeric rejects most draws): up to 500 bytes a
// character, charged.
func randN(h *holder, name string, base template.FuncMap) func(int) (string, error) {
	f := base[name].(func(int) string)
	perChar := int64(128)
	if name == "randNumeric" {
		perChar = 512
	}
	return func(n int) (string, error) {
		return budget.Bounded(h.meter(), budget.MulSat(int64(max(n, 0)), perChar), func() string { return name + " " + strconv.Itoa(n) },
			func() (string, error) { return f(n), nil }, nil)
	}
}

// indent is sprig's indent and nindent: every line grows by n.
func indent(m *budget.Meter, name string, n int, s string, newline bool) (string, error) {
	if n < 0 {
		return "", funcErrorf("%s: negative width %d", name, n)
	}
	lines := int64(strings.Count(s, "\n")) + 1
	return budget.Bounded(m, int64(len(s))+budget.MulSat(lines, int64(n))+1, func() string {
		return fmt.Sprintf("%s %d of %d lines", name, n, lines)
	}, func() (string, error) {
		pad := strings.Repeat(" ", n)
		out := pad + strings.ReplaceAll(s, "\n", "\n"+pad)
		if newline {
			out = "\n" + out
		}
		return out, nil
	}, strCost)
}

// wrapWith is sprig's wrap and wrapWith, f: every n bytes may add with.
func wrapWith(m *budget.Meter, name string, n int, with, s string, f func() string) (string, error) {
	size := int64(len(s)) + budget.MulSat(int64(len(s))/int64(max(n, 1))+1, int64(len(with)))
	return budget.Bounded(m, size, func() string { return fmt.Sprintf("%s of %d bytes", name, len(s)) },
		func() (string, error) { return f(), nil }, strCost)
}

// seqCount is how many numbers sprig's seq prints for params.
func seqCount(p []int) int64 {
	switch len(p) {
	case 1:
		return absInt(p[0]) + 1
	case 2:
		return absInt(p[1]-p[0]) + 1
	case 3:
		if p[1] == 0 {
			return 0
		}
		return absInt64(int64(p[2])-int64(p[0]))/absInt(p[1]) + 1
	}
	return 0
}

// strCost is what a string result takes: the cost of most bounded calls.
func strCost(s string) int64 { return int64(len(s)) }

func absInt(n int) int64 {
	if n < 0 {
		return -int64(n)
	}
	return int64(n)
}

func absInt64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
