package render

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"
)

// The functions below replace sprig's and text/template's where one call,
// or a few calls in a loop, can build a value far larger than its inputs:
// they refuse before allocating what would not fit the output budget, and
// charge what they return to it. Every other function that returns a
// string is wrapped to charge its result (wrapString), so any chain of
// string operations that grows its input (b64enc in a loop, replace
// doubling a string) stops at the budget.
//
// The functions are bound to a holder, whose renderState is set for each
// render (see instance), so one set of closures serves many renders.

// nondeterministic are the functions whose result differs from call to
// call; a render records which files called them, so that a child that
// changes on every render can be explained.
var nondeterministic = map[string]bool{
	"randAlpha": true, "randAlphaNum": true, "randAscii": true, "randNumeric": true, "randBytes": true,
	"uuidv4": true, "shuffle": true, "bcrypt": true, "htpasswd": true, "encryptAES": true,
	"genPrivateKey": true, "genCA": true, "genCAWithKey": true, "genSelfSignedCert": true,
	"genSelfSignedCertWithKey": true, "genSignedCert": true, "genSignedCertWithKey": true,
}

// guardedFuncs wraps base (sprig's functions plus Helm's) for renders
// through h.
func guardedFuncs(h *holder, base template.FuncMap) template.FuncMap {
	out := make(template.FuncMap, len(base)+16)
	for name, fn := range base {
		out[name] = wrapGeneric(h, name, fn)
	}
	for name, fn := range boundedFuncs(h, base) {
		out[name] = fn
	}
	for name := range base {
		if nondeterministic[name] {
			out[name] = markCalls(h, name, out[name])
		}
	}
	return out
}

// boundedFuncs are the explicit replacements.
func boundedFuncs(h *holder, base template.FuncMap) template.FuncMap {
	m := func() *meter { return &h.st.meter }
	sprigRepeat := base["repeat"].(func(int, string) string)
	return template.FuncMap{
		tickFunc: func() (string, error) { return "", m().check() },
		emitFunc: func(v any) (any, error) {
			switch v.(type) {
			case nil, string, bool, int, int64, float64:
				return v, nil
			}
			return v, h.st.walk("print", v)
		},

		"until": func(n int) ([]int, error) {
			if err := m().fits(8*absInt(n), func() string { return "until " + strconv.Itoa(n) }); err != nil {
				return nil, err
			}
			out := base["until"].(func(int) []int)(n)
			return out, m().charge(int64(8*len(out)), nil)
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			if err := m().fits(8*stepCount(start, stop, step), func() string {
				return fmt.Sprintf("untilStep %d %d %d", start, stop, step)
			}); err != nil {
				return nil, err
			}
			out := base["untilStep"].(func(int, int, int) []int)(start, stop, step)
			return out, m().charge(int64(8*len(out)), nil)
		},
		"seq": func(params ...int) (string, error) {
			if err := m().fits(21*seqCount(params), func() string { return fmt.Sprintf("seq %v", params) }); err != nil {
				return "", err
			}
			out := base["seq"].(func(...int) string)(params...)
			return out, m().charge(int64(len(out)), nil)
		},
		"repeat": func(count int, s string) (string, error) {
			if count < 0 {
				return "", funcErrorf("repeat: negative count %d", count)
			}
			if err := m().fits(mulSat(int64(count), int64(len(s))), func() string { return fmt.Sprintf("repeat %d of %d bytes", count, len(s)) }); err != nil {
				return "", err
			}
			out := sprigRepeat(count, s)
			return out, m().charge(int64(len(out)), nil)
		},
		"indent":  func(n int, s string) (string, error) { return h.st.indent("indent", n, s, false) },
		"nindent": func(n int, s string) (string, error) { return h.st.indent("nindent", n, s, true) },
		"replace": func(old, repl, s string) (string, error) {
			n := int64(strings.Count(s, old))
			if old == "" {
				n = int64(utf8.RuneCountInString(s)) + 1
			}
			size := int64(len(s)) + mulSat(n, int64(len(repl)-len(old)))
			if err := m().fits(size, func() string { return fmt.Sprintf("replace in %d bytes", len(s)) }); err != nil {
				return "", err
			}
			out := strings.ReplaceAll(s, old, repl)
			return out, m().charge(int64(len(out)), nil)
		},
		"regexReplaceAll":            regexReplace(h, "regexReplaceAll", base),
		"regexReplaceAllLiteral":     regexReplace(h, "regexReplaceAllLiteral", base),
		"mustRegexReplaceAll":        regexReplaceErr(h, "mustRegexReplaceAll", base),
		"mustRegexReplaceAllLiteral": regexReplaceErr(h, "mustRegexReplaceAllLiteral", base),
		"wrap": func(n int, s string) (string, error) {
			return h.st.wrapWith("wrap", n, "\n", s, func() string { return base["wrap"].(func(int, string) string)(n, s) })
		},
		"wrapWith": func(n int, with, s string) (string, error) {
			return h.st.wrapWith("wrapWith", n, with, s, func() string { return base["wrapWith"].(func(int, string, string) string)(n, with, s) })
		},
		"randAlpha":    randN(h, "randAlpha", base),
		"randAlphaNum": randN(h, "randAlphaNum", base),
		"randAscii":    randN(h, "randAscii", base),
		"randNumeric":  randN(h, "randNumeric", base),
		"randBytes": func(n int) (string, error) {
			if err := m().fits(2*int64(max(n, 0)), func() string { return "randBytes " + strconv.Itoa(n) }); err != nil {
				return "", err
			}
			out, err := base["randBytes"].(func(int) (string, error))(n)
			if err != nil {
				return "", err
			}
			return out, m().charge(int64(len(out)), nil)
		},

		// text/template's printing builtins, which format whole values with
		// fmt; overriding a builtin by name is allowed by text/template.
		"printf": func(format string, args ...any) (string, error) {
			if err := h.st.walkAll("printf", args); err != nil {
				return "", err
			}
			if err := checkFormat(m(), format, args); err != nil {
				return "", err
			}
			out := fmt.Sprintf(format, args...)
			return out, m().charge(int64(len(out)), nil)
		},
		"print":    printer(h, "print", fmt.Sprint),
		"println":  printer(h, "println", fmt.Sprintln),
		"html":     printer(h, "html", template.HTMLEscaper),
		"js":       printer(h, "js", template.JSEscaper),
		"urlquery": printer(h, "urlquery", template.URLQueryEscaper),

		"concat": func(lists ...any) (any, error) {
			var n int64
			for _, l := range lists {
				if v := reflect.ValueOf(l); v.Kind() == reflect.Slice || v.Kind() == reflect.Array {
					n += int64(v.Len())
				}
			}
			if err := m().charge(8*n, func() string { return fmt.Sprintf("concat of %d elements", n) }); err != nil {
				return nil, err
			}
			return base["concat"].(func(...any) any)(lists...), nil
		},
		"list": func(items ...any) ([]any, error) {
			return items, m().charge(8*int64(len(items)), func() string { return "list" })
		},
		"dict": func(kv ...any) (map[string]any, error) {
			if err := m().charge(8*int64(len(kv)), func() string { return "dict" }); err != nil {
				return nil, err
			}
			return base["dict"].(func(...any) map[string]any)(kv...), nil
		},
		"splitList": func(sep, s string) ([]string, error) {
			n := int64(strings.Count(s, sep)) + 1
			if sep == "" {
				n = int64(utf8.RuneCountInString(s))
			}
			if err := m().charge(16*n, func() string { return fmt.Sprintf("splitList of %d bytes", len(s)) }); err != nil {
				return nil, err
			}
			return strings.Split(s, sep), nil
		},
	}
}

// wrapGeneric charges the result of functions that return strings or
// lists and walks the arguments of those that format whole values; other
// functions are returned as they are. The common signatures get typed
// closures: a reflect.MakeFunc wrapper costs a microsecond per call.
func wrapGeneric(h *holder, name string, fn any) any {
	m := func() *meter { return &h.st.meter }
	charge := func(s string) error { return m().charge(int64(len(s)), func() string { return name }) }
	switch f := fn.(type) {
	case func(string) string:
		return func(a string) (string, error) { out := f(a); return out, charge(out) }
	case func(string, string) string:
		return func(a, b string) (string, error) { out := f(a, b); return out, charge(out) }
	case func(int, string) string:
		return func(n int, a string) (string, error) { out := f(n, a); return out, charge(out) }
	case func(string, string, string) string:
		return func(a, b, c string) (string, error) { out := f(a, b, c); return out, charge(out) }
	case func(any) string:
		return func(v any) (string, error) {
			if err := h.st.walk(name, v); err != nil {
				return "", err
			}
			out := f(v)
			return out, charge(out)
		}
	case func(...any) string:
		return func(v ...any) (string, error) {
			if err := h.st.walkAll(name, v); err != nil {
				return "", err
			}
			out := f(v...)
			return out, charge(out)
		}
	case func(string, any) string:
		return func(a string, v any) (string, error) {
			if err := h.st.walk(name, v); err != nil {
				return "", err
			}
			out := f(a, v)
			return out, charge(out)
		}
	case func(any) (string, error):
		return func(v any) (string, error) {
			if err := h.st.walk(name, v); err != nil {
				return "", err
			}
			out, err := f(v)
			if err != nil {
				return "", err
			}
			return out, charge(out)
		}
	case func(any) []string:
		return func(v any) ([]string, error) {
			if err := h.st.walk(name, v); err != nil {
				return nil, err
			}
			out := f(v)
			return out, m().charge(16*int64(len(out)), func() string { return name })
		}
	case func(any) any, func(any) (any, error):
		if name == "deepCopy" || name == "mustDeepCopy" {
			return walkFirst(h, name, fn)
		}
	case func(map[string]any, ...map[string]any) any, func(map[string]any, ...map[string]any) (any, error):
		// mergo recurses without cycle detection on values that are not
		// addressable: a map holding itself would overflow the stack.
		return walkFirst(h, name, fn)
	}
	return fn
}

// walkFirst wraps fn so that every argument is walked before the call.
func walkFirst(h *holder, name string, fn any) any {
	v := reflect.ValueOf(fn)
	return reflect.MakeFunc(v.Type(), func(args []reflect.Value) []reflect.Value {
		for _, a := range args {
			if a.Kind() == reflect.Slice && v.Type().IsVariadic() && a.Type().Elem().Kind() == reflect.Map {
				for i := range a.Len() {
					if err := h.st.walk(name, a.Index(i).Interface()); err != nil {
						panic(err)
					}
				}
				continue
			}
			if err := h.st.walk(name, a.Interface()); err != nil {
				// text/template recovers a panic in a function call into an
				// error of that call; the signature has no room for one.
				panic(err)
			}
		}
		if v.Type().IsVariadic() {
			return v.CallSlice(args)
		}
		return v.Call(args)
	}).Interface()
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

func randN(h *holder, name string, base template.FuncMap) func(int) (string, error) {
	f := base[name].(func(int) string)
	return func(n int) (string, error) {
		if err := h.st.meter.fits(int64(max(n, 0)), func() string { return name + " " + strconv.Itoa(n) }); err != nil {
			return "", err
		}
		out := f(n)
		return out, h.st.meter.charge(int64(len(out)), nil)
	}
}

func printer(h *holder, name string, f func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		if err := h.st.walkAll(name, args); err != nil {
			return "", err
		}
		out := f(args...)
		return out, h.st.meter.charge(int64(len(out)), func() string { return name })
	}
}

// regexBound is an upper bound of a regex replacement's output: matches
// do not overlap, so each $ reference expands to at most the whole input
// once over all matches, and there are at most len(s)+1 matches.
func regexBound(s, repl string) int64 {
	refs := int64(strings.Count(repl, "$"))
	return mulSat(int64(len(s)), 1+refs) + mulSat(int64(len(s))+1, int64(len(repl)))
}

func regexReplace(h *holder, name string, base template.FuncMap) func(string, string, string) (string, error) {
	f := base[name].(func(string, string, string) string)
	return func(re, s, repl string) (string, error) {
		if err := h.st.meter.fits(regexBound(s, repl), func() string { return fmt.Sprintf("%s in %d bytes", name, len(s)) }); err != nil {
			return "", err
		}
		out := f(re, s, repl)
		return out, h.st.meter.charge(int64(len(out)), nil)
	}
}

func regexReplaceErr(h *holder, name string, base template.FuncMap) func(string, string, string) (string, error) {
	f := base[name].(func(string, string, string) (string, error))
	return func(re, s, repl string) (string, error) {
		if err := h.st.meter.fits(regexBound(s, repl), func() string { return fmt.Sprintf("%s in %d bytes", name, len(s)) }); err != nil {
			return "", err
		}
		out, err := f(re, s, repl)
		if err != nil {
			return "", err
		}
		return out, h.st.meter.charge(int64(len(out)), nil)
	}
}

func (st *renderState) indent(name string, n int, s string, newline bool) (string, error) {
	if n < 0 {
		return "", funcErrorf("%s: negative width %d", name, n)
	}
	lines := int64(strings.Count(s, "\n")) + 1
	if err := st.meter.fits(int64(len(s))+mulSat(lines, int64(n))+1, func() string {
		return fmt.Sprintf("%s %d of %d lines", name, n, lines)
	}); err != nil {
		return "", err
	}
	pad := strings.Repeat(" ", n)
	out := pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	if newline {
		out = "\n" + out
	}
	return out, st.meter.charge(int64(len(out)), nil)
}

func (st *renderState) wrapWith(name string, n int, with, s string, f func() string) (string, error) {
	size := int64(len(s)) + mulSat(int64(len(s))/int64(max(n, 1))+1, int64(len(with)))
	if err := st.meter.fits(size, func() string { return fmt.Sprintf("%s of %d bytes", name, len(s)) }); err != nil {
		return "", err
	}
	out := f()
	return out, st.meter.charge(int64(len(out)), nil)
}

// checkFormat refuses printf widths and precisions larger than what is left
// of the budget: fmt would allocate them before anything is charged.
func checkFormat(m *meter, format string, args []any) error {
	argi := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		for part := 0; part < 2 && i < len(format); part++ {
			if part == 1 {
				if format[i] != '.' {
					break
				}
				i++
			}
			var n int64
			switch {
			case i < len(format) && format[i] == '*':
				if argi < len(args) {
					if v := reflect.ValueOf(args[argi]); v.CanInt() {
						n = v.Int()
					}
				}
				argi++
				i++
			case i < len(format) && format[i] == '[':
				// Explicit argument indexes: take the conservative path.
				return m.fits(m.remaining()+1, func() string { return "printf with argument indexes" })
			default:
				for i < len(format) && format[i] >= '0' && format[i] <= '9' {
					n = mulSat(n, 10) + int64(format[i]-'0')
					i++
				}
			}
			if err := m.fits(absInt64(n), func() string { return fmt.Sprintf("printf width %d", n) }); err != nil {
				return err
			}
		}
		if i < len(format) && format[i] != '%' {
			argi++
		}
	}
	return nil
}

// expandedSize estimates the bytes v takes once printed (fmt, JSON or YAML
// all print a shared value once per reference), and gives up as soon as the
// estimate passes limit: cost is bounded by limit, not by the expansion,
// and a value that holds itself simply runs over.
func expandedSize(v any, limit int64) (int64, bool) {
	var n int64
	stack := []any{v}
	for len(stack) > 0 {
		if n > limit {
			return n, false
		}
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := cur.(type) {
		case nil:
			n += 4
		case string:
			n += int64(len(x)) + 2
		case bool:
			n += 5
		case int, int64, int32, float64, float32, uint, uint64:
			n += 8
		case []any:
			n += 2 + int64(len(x))
			stack = append(stack, x...)
		case map[string]any:
			n += 2
			for k, e := range x {
				n += int64(len(k)) + 4
				stack = append(stack, e)
			}
		case []string:
			for _, s := range x {
				n += int64(len(s)) + 3
			}
		case map[string]string:
			for k, s := range x {
				n += int64(len(k)+len(s)) + 6
			}
		default:
			rv := reflect.ValueOf(cur)
			switch rv.Kind() {
			case reflect.Slice, reflect.Array:
				n += 2 + int64(rv.Len())
				for i := range rv.Len() {
					stack = append(stack, rv.Index(i).Interface())
				}
			case reflect.Map:
				n += 2
				it := rv.MapRange()
				for it.Next() {
					n += 4
					stack = append(stack, it.Key().Interface(), it.Value().Interface())
				}
			case reflect.Pointer, reflect.Interface:
				if !rv.IsNil() {
					stack = append(stack, rv.Elem().Interface())
				}
			default:
				n += 64 // a struct (a time, a certificate) or another scalar
			}
		}
	}
	return n, n <= limit
}

// walk checks that v can be printed within the budget left.
func (st *renderState) walk(name string, v any) error {
	if err := st.meter.check(); err != nil {
		return err
	}
	limit := st.meter.remaining()
	if size, ok := expandedSize(v, limit); !ok {
		return &BudgetError{Budget: BudgetOutput, Limit: st.meter.budget.MaxOutputBytes,
			Detail: fmt.Sprintf("%s of a value of more than %d bytes (a list or map holding itself, or the same one many times?)", name, size)}
	}
	return nil
}

func (st *renderState) walkAll(name string, vs []any) error {
	for _, v := range vs {
		switch v.(type) {
		case nil, string, bool, int, int64, float64:
			continue
		}
		if err := st.walk(name, v); err != nil {
			return err
		}
	}
	return nil
}

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

// mulSat multiplies non-negative a and b, saturating instead of overflowing.
func mulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return a * b
	}
	if a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}

// stepCount is how many elements untilStep(start, stop, step) returns.
func stepCount(start, stop, step int) int64 {
	span, st := int64(stop)-int64(start), int64(step)
	if st == 0 || (span > 0) != (st > 0) || span == 0 {
		return 0
	}
	return absInt64(span)/absInt64(st) + 1
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
