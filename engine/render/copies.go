package render

import (
	"text/template"

	"github.com/tmplop/operator/engine/render/internal/budget"
)

// Some of sprig's functions allocate about the size of their arguments on
// every call, whatever they return: a []byte conversion to hash or decode
// a string, or an error from strconv or cast that quotes the argument and
// is dropped. Charged only for their result (a digest, a number, a
// boolean), a loop of them allocates far more than the budget sees:
// FuzzFuncAlloc found `round` of an 800-byte string allocating 4.7 MB in
// a thousand calls under a 64 KiB budget. So each call is also charged the
// size of the string arguments it copies, before it runs.
//
// TestFunctionsChargeWhatTheyAllocate probes every function with large
// arguments, so that one that copies them and is not charged fails it.

func copyingFuncs(h *holder, base template.FuncMap) template.FuncMap {
	out := template.FuncMap{}
	for _, name := range []string{"sha1sum", "sha256sum", "sha512sum", "adler32sum", "b64dec", "b32dec"} {
		f := base[name].(func(string) string)
		out[name] = func(s string) (string, error) {
			return copyingCall(h, name, len(s), func() string { return f(s) }, strCost)
		}
	}
	atoi := base["atoi"].(func(string) int)
	out["atoi"] = func(s string) (int, error) {
		return copyingCall(h, "atoi", len(s), func() int { return atoi(s) }, nil)
	}
	typeIsLike := base["typeIsLike"].(func(string, any) bool)
	out["typeIsLike"] = func(target string, v any) (bool, error) {
		return copyingCall(h, "typeIsLike", len(target), func() bool { return typeIsLike(target, v) }, nil)
	}
	// duration parses a string argument, and the error it drops quotes
	// it; other types are converted without allocating (durationRound
	// too: dates.go).
	duration := base["duration"].(func(any) string)
	out["duration"] = func(v any) (string, error) {
		s, _ := v.(string)
		return copyingCall(h, "duration", len(s), func() string { return duration(v) }, strCost)
	}
	return out
}

// copyingCall runs f, which copies n bytes of its arguments, charged n and
// what cost says its result takes.
func copyingCall[R any](h *holder, name string, n int, f func() R, cost func(R) int64) (R, error) {
	return budget.Bounded(h.meter(), int64(n), func() string { return name }, func() (R, error) { return f(), nil },
		func(r R) int64 {
			if cost == nil {
				return int64(n)
			}
			return budget.AddSat(int64(n), cost(r))
		})
}
