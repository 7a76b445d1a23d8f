package render

import (
	"fmt"
	"maps"
	"reflect"
	"text/template"
	"time"

	"github.com/tmplop/operator/engine/render/internal/budget"
)

// Every function a template can call is wrapped, so that:
//   - it checks the stop flag first: a render past its deadline, or
//     abandoned, stops at its next call, not at the end of the template;
//   - what it returns is charged to the output budget (strings, lists,
//     maps), and functions that print whole values measure them first.
//
// The functions that can build far more than their inputs, or loop over
// them, are replaced (boundedFuncs: limits.go, printf.go, collections.go,
// convert.go, compare.go, regex.go, dates.go) so that they refuse before they
// allocate or run past a bound, and so are those that copy their arguments
// on every call, whatever they return (copies.go). The rest return at most a small multiple
// of their input; budget_funcs_test.go lists each with the reason, so that
// a function added by a sprig upgrade fails the test until it is reviewed.
//
// Key and certificate generation (genPrivateKey, genCA, genSelfSignedCert,
// genSignedCert...) cannot be interrupted either, and takes up to a second
// for a 4096-bit RSA key, but is bounded by nature: sprig's key sizes are
// fixed (RSA 2048 or 4096 bits, P-256, Ed25519, DSA 1024). The stop check
// at entry is what refuses to start another key after the deadline.
//
// The functions are bound to a holder, which the render that checks out
// the instance points at its state (instance.go), so one set of closures
// serves many renders. Every estimate, refusal and charge goes through the
// render's budget.Meter, most through budget.Bounded.

// guardedFuncs wraps base (sprig's functions plus Helm's) for renders
// through h.
func guardedFuncs(h *holder, base template.FuncMap) template.FuncMap {
	out := make(template.FuncMap, len(base)+16)
	for name, fn := range base {
		out[name] = wrapGeneric(h, name, fn)
	}
	maps.Copy(out, boundedFuncs(h, base))
	for name := range base {
		if nondeterministic[name] == random {
			out[name] = markCalls(h, name, out[name])
		}
	}
	return out
}

// boundedFuncs are the explicit replacements.
func boundedFuncs(h *holder, base template.FuncMap) template.FuncMap {
	out := stringFuncs(h, base)
	for _, fs := range []template.FuncMap{
		tickFuncs(h), dateFuncs(h, base), printFuncs(h), collectionFuncs(h, base),
		convertFuncs(h, base), compareFuncs(h), regexFuncs(h), copyingFuncs(h, base),
	} {
		maps.Copy(out, fs)
	}
	return out
}

// wrapGeneric checks the stop flag before fn and charges what it returns;
// functions that format whole values have them measured first. The common
// signatures get typed closures: a reflect.MakeFunc wrapper costs a
// microsecond per call.
func wrapGeneric(h *holder, name string, fn any) any {
	if w := wrapString(h, name, fn); w != nil {
		return w
	}
	if w := wrapChecked(h, name, fn); w != nil {
		return w
	}
	if w := wrapNumber(h, name, fn); w != nil {
		return w
	}
	return reflectGuard(h, name, fn)
}

// wrapString wraps the functions that return a string: charged, their
// arguments measured first when they print them. nil for other types.
func wrapString(h *holder, name string, fn any) any {
	charged := func(s string) (string, error) {
		return s, h.meter().Charge(int64(len(s)), func() string { return name })
	}
	walked := func(v any) error { return h.meter().Walk(name, v) }
	switch f := fn.(type) {
	case func(string) string:
		return func(a string) (string, error) {
			if err := h.meter().Check(); err != nil {
				return "", err
			}
			return charged(f(a))
		}
	case func(string, string) string:
		return func(a, b string) (string, error) {
			if err := h.meter().Check(); err != nil {
				return "", err
			}
			return charged(f(a, b))
		}
	case func(int, string) string:
		return func(n int, a string) (string, error) {
			if err := h.meter().Check(); err != nil {
				return "", err
			}
			return charged(f(n, a))
		}
	case func(string, string, string) string:
		return func(a, b, c string) (string, error) {
			if err := h.meter().Check(); err != nil {
				return "", err
			}
			return charged(f(a, b, c))
		}
	case func(string, string) (string, error):
		return func(a, b string) (string, error) {
			if err := h.meter().Check(); err != nil {
				return "", err
			}
			out, err := f(a, b)
			if err != nil {
				return "", err
			}
			return charged(out)
		}
	}
	return wrapPrinting(h, name, fn, charged, walked)
}

// wrapPrinting wraps the functions that print values of any type into a
// string (cat, quote, toString...): the values are measured first.
func wrapPrinting(h *holder, name string, fn any, charged func(string) (string, error), walked func(any) error) any {
	switch f := fn.(type) {
	case func(any) string:
		return func(v any) (string, error) {
			if err := walked(v); err != nil {
				return "", err
			}
			return charged(f(v))
		}
	case func(...any) string:
		return func(v ...any) (string, error) {
			if err := h.meter().WalkAll(name, v); err != nil {
				return "", err
			}
			return charged(f(v...))
		}
	case func(string, any) string:
		return func(a string, v any) (string, error) {
			if err := walked(v); err != nil {
				return "", err
			}
			return charged(f(a, v))
		}
	case func(any) (string, error):
		return func(v any) (string, error) {
			if err := walked(v); err != nil {
				return "", err
			}
			out, err := f(v)
			if err != nil {
				return "", err
			}
			return charged(out)
		}
	}
	return nil
}

// wrapChecked wraps the functions whose results are scalars, or elements
// of their input: the stop check is enough. nil for other types.
func wrapChecked(h *holder, name string, fn any) any {
	switch f := fn.(type) {
	case func(string) bool:
		return checked1(h, f)
	case func(string, string) bool:
		return checked2(h, f)
	case func(any) bool:
		return checked1(h, f)
	case func(any, any) bool:
		return checked2(h, f)
	case func(string, any) bool:
		return checked2(h, f)
	case func(map[string]any, string) bool:
		return checked2(h, f)
	case func(...any) bool:
		return checkedV(h, f)
	case func(string) int:
		return checked1(h, f)
	case func(any) any:
		return checked1(h, f)
	case func(...any) any:
		return checkedV(h, f)
	case func(any, ...any) any: // slice: a new list of its input's elements
		return func(a any, v ...any) (any, error) {
			m := h.meter()
			if err := m.Check(); err != nil {
				return nil, err
			}
			out := f(a, v...)
			return out, m.Charge(resultCost(m, reflect.ValueOf(&out).Elem()), func() string { return name })
		}
	case func(map[string]any, string) any:
		return checked2(h, f)
	case func(any, any, bool) any:
		return func(a, b any, c bool) (any, error) {
			if err := h.meter().Check(); err != nil {
				return nil, err
			}
			return f(a, b, c), nil
		}
	case func(any) (any, error):
		return func(v any) (any, error) {
			if err := h.meter().Check(); err != nil {
				return nil, err
			}
			return f(v)
		}
	case func(string, any) (any, error):
		return func(a string, v any) (any, error) {
			if err := h.meter().Check(); err != nil {
				return nil, err
			}
			return f(a, v)
		}
	}
	return nil
}

// wrapNumber wraps the functions that return numbers from any value (add,
// max, int64, floor...): sprig converts with cast, which formats a value
// it cannot convert into an error that it then drops: a string or a list
// costs its printed size on every call, whatever the result (FuzzFuncAlloc:
// biggest of a 6 KB string in a loop). nil for other types.
func wrapNumber(h *holder, name string, fn any) any {
	switch f := fn.(type) {
	case func(any) int:
		return func(a any) (int, error) { return casted(h, name, func() int { return f(a) }, a) }
	case func(any) int64:
		return func(a any) (int64, error) { return casted(h, name, func() int64 { return f(a) }, a) }
	case func(any, any) int64:
		return func(a, b any) (int64, error) { return casted(h, name, func() int64 { return f(a, b) }, a, b) }
	case func(...any) int64:
		return func(v ...any) (int64, error) { return casted(h, name, func() int64 { return f(v...) }, v...) }
	case func(any, ...any) int64:
		return func(a any, v ...any) (int64, error) {
			return casted(h, name, func() int64 { return f(a, v...) }, append([]any{a}, v...)...)
		}
	case func(any) float64:
		return func(a any) (float64, error) { return casted(h, name, func() float64 { return f(a) }, a) }
	case func(...any) float64:
		return func(v ...any) (float64, error) { return casted(h, name, func() float64 { return f(v...) }, v...) }
	case func(any, ...any) float64:
		return func(a any, v ...any) (float64, error) {
			return casted(h, name, func() float64 { return f(a, v...) }, append([]any{a}, v...)...)
		}
	case func(any, int, ...float64) float64: // round
		return func(a any, p int, v ...float64) (float64, error) {
			return casted(h, name, func() float64 { return f(a, p, v...) }, a)
		}
	}
	return nil
}

// casted runs f, a conversion of args to a number, bounded by what
// converting args may format: nothing for numbers, booleans and nil, the
// printed size of anything else.
func casted[R any](h *holder, name string, f func() R, args ...any) (R, error) {
	var zero R
	m := h.meter()
	if err := m.Check(); err != nil {
		return zero, err
	}
	var est int64
	for _, a := range args {
		switch x := a.(type) {
		case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
			continue
		case string:
			est = budget.AddSat(est, int64(len(x)))
		default:
			s, err := m.Measure(name, a, 0)
			if err != nil {
				return zero, err
			}
			est = budget.AddSat(est, s.PrintCost())
		}
	}
	if est == 0 {
		return f(), nil // numbers: cast formats nothing
	}
	return budget.Bounded(m, est, func() string { return name + " of a value that is not a number" },
		func() (R, error) { return f(), nil }, nil)
}

func checked1[A, R any](h *holder, f func(A) R) func(A) (R, error) {
	return func(a A) (R, error) {
		if err := h.meter().Check(); err != nil {
			var zero R
			return zero, err
		}
		return f(a), nil
	}
}

func checked2[A, B, R any](h *holder, f func(A, B) R) func(A, B) (R, error) {
	return func(a A, b B) (R, error) {
		if err := h.meter().Check(); err != nil {
			var zero R
			return zero, err
		}
		return f(a, b), nil
	}
}

func checkedV[R any](h *holder, f func(...any) R) func(...any) (R, error) {
	return func(v ...any) (R, error) {
		if err := h.meter().Check(); err != nil {
			var zero R
			return zero, err
		}
		return f(v...), nil
	}
}

var (
	errorType = reflect.TypeFor[error]()
	timeType  = reflect.TypeFor[time.Time]()
)

// reflectGuard is wrapGeneric for the other signatures: the same function
// with an error result added, if it had none, for the stop check and the
// charge. What it allocates is not known before the call: its estimate is
// nothing, and its result is charged.
func reflectGuard(h *holder, name string, fn any) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	in := make([]reflect.Type, t.NumIn())
	for i := range in {
		in[i] = t.In(i)
	}
	out := make([]reflect.Type, t.NumOut())
	for i := range out {
		out[i] = t.Out(i)
	}
	hasErr := len(out) == 2 && out[1] == errorType
	if !hasErr {
		out = append(out, errorType)
	}
	call := func(args []reflect.Value) ([]reflect.Value, error) {
		var res []reflect.Value
		if t.IsVariadic() {
			res = v.CallSlice(args)
		} else {
			res = v.Call(args)
		}
		if hasErr && !res[1].IsNil() {
			return nil, res[1].Interface().(error)
		}
		return res, nil
	}
	return reflect.MakeFunc(reflect.FuncOf(in, out, t.IsVariadic()), func(args []reflect.Value) []reflect.Value {
		m := h.meter()
		res, err := budget.Bounded(m, 0, func() string { return name },
			func() ([]reflect.Value, error) { return call(args) },
			func(res []reflect.Value) int64 { return resultCost(m, res[0]) })
		if err != nil {
			return failed(out, err)
		}
		if !hasErr {
			res = append(res, reflect.Zero(errorType))
		}
		return res
	}).Interface()
}

// failed is the results of a function of out that returns err: zero
// values, then err. Its own function, so that err is moved to the heap
// only when a call fails.
func failed(out []reflect.Type, err error) []reflect.Value {
	res := make([]reflect.Value, len(out))
	for i := range len(out) - 1 {
		res[i] = reflect.Zero(out[i])
	}
	res[len(out)-1] = reflect.ValueOf(&err).Elem()
	return res
}

// resultCost is what a function's result takes, by its kind: of the value
// it holds, for a result declared as any.
func resultCost(m *budget.Meter, rv reflect.Value) int64 {
	for rv.Kind() == reflect.Interface && !rv.IsNil() {
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.String:
		return int64(rv.Len())
	case reflect.Slice:
		return budget.ElemCost * int64(rv.Len())
	case reflect.Map:
		return budget.EntryCost * int64(rv.Len())
	case reflect.Struct, reflect.Pointer:
		if rv.Type() == timeType {
			return 0
		}
		// A certificate and its key, a semver version.
		size, _ := budget.Size(rv.Interface(), m.Remaining()+1)
		return size
	}
	return 0
}

// markCalls records that the render's current file called name.
func markCalls(h *holder, name string, fn any) any {
	v := reflect.ValueOf(fn)
	return reflect.MakeFunc(v.Type(), func(args []reflect.Value) []reflect.Value {
		h.st.calledNondeterministic(name)
		if v.Type().IsVariadic() {
			return v.CallSlice(args)
		}
		return v.Call(args)
	}).Interface()
}

// tickFuncs are the functions the guarded trees call (guard.go).
func tickFuncs(h *holder) template.FuncMap {
	return template.FuncMap{
		tickFunc: func(weight int) (string, error) {
			return "", h.meter().Charge(iterCost+cmdCost*int64(max(weight, 0)), func() string {
				return fmt.Sprintf("range iterations (%d bytes each for %d commands)", iterCost+cmdCost*max(weight, 0), weight)
			})
		},
		emitFunc: func(v any) (any, error) {
			switch v.(type) {
			case nil, string, bool, int, int64, float64, time.Duration:
				return v, h.meter().Check()
			}
			return v, h.meter().Walk("print", v)
		},
	}
}
