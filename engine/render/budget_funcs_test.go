package render

import (
	"errors"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"
)

// reviewed are the functions that are not replaced by a bounded version
// although their types let them build a string, a list or a map, or loop
// over their input, with the reason why the generic wrapper (stop check
// first, result charged after) is enough. A function that a sprig upgrade
// adds, or whose type changes, fails TestEveryFunctionIsBounded until it
// is replaced or reviewed here.
var reviewed = func() map[string]string {
	r := map[string]string{}
	add := func(why string, names ...string) {
		for _, n := range names {
			r[n] = why
		}
	}
	add("returns at most twice its input, charged",
		"abbrev", "abbrevboth", "substr", "trunc", "initials", "camelcase", "snakecase", "kebabcase", "swapcase",
		"title", "untitle", "upper", "lower", "nospace", "trim", "trimAll", "trimall", "trimPrefix", "trimSuffix",
		"b64enc", "b32enc", "shuffle", "regexQuoteMeta", "plural",
		"base", "dir", "clean", "ext", "osBase", "osDir", "osClean", "osExt", "urlJoin", "buildCustomCert",
		"encryptAES", "decryptAES", "fail")
	add("measures its arguments first (a value that holds itself is refused), returns what they print, at most 4 times (%q), charged",
		"cat", "quote", "squote", "toString", "typeOf", "kindOf")
	add("prints a date or a duration: the size of its layout, at most twice, charged",
		"unixEpoch")
	add("returns a fixed size, charged", "bcrypt", "htpasswd",
		"uuidv4", "hello", "getHostByName", "genPrivateKey")
	add("fixed cost per call, not charged: scrypt (N=32768) allocates 32 MiB and takes about 100 ms; charging it would refuse it under the default budget",
		"derivePassword")
	add("generates one RSA 2048 key (bounded, see funcguard.go); the certificate grows with the names and IPs passed, lists already charged; charged",
		"genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey")
	add("returns an element of its input, or a value of its arguments",
		"first", "last", "mustFirst", "mustLast", "get", "default", "coalesce", "ternary", "required", "dig")
	add("returns a new list of its input's elements, charged", "slice", "mustSlice")
	add("a number or a boolean; loops over its arguments, which the template text bounds",
		"add", "sub", "mul", "div", "mod", "max", "min", "biggest", "add1", "addf", "subf", "mulf", "divf", "maxf", "minf",
		"add1f", "ceil", "floor", "round", "float64", "int", "int64", "toDecimal", "empty", "all", "any",
		"kindIs", "typeIs", "hasKey")
	add("one reflect.DeepEqual: linear in the smaller argument, values already in the render (cycles are detected)",
		"deepEqual")
	add("mutates its argument in place, allocates nothing", "unset")
	add("parses a short string into a small fixed structure, charged",
		"urlParse", "semver", "semverCompare", "toDate", "mustToDate", "dateModify", "date_modify", "mustDateModify", "must_date_modify")
	return r
}()

// risky reports whether a function of type t can return something large
// (a string, a list, a map, anything) or loop over a large input.
func risky(t reflect.Type) bool {
	if t.IsVariadic() {
		return true
	}
	big := func(k reflect.Kind) bool {
		switch k {
		case reflect.String, reflect.Slice, reflect.Map, reflect.Interface, reflect.Struct, reflect.Pointer, reflect.Array:
			return true
		}
		return false
	}
	for i := range t.NumIn() {
		if k := t.In(i).Kind(); k != reflect.String && big(k) {
			return true
		}
	}
	return t.NumOut() > 0 && big(t.Out(0).Kind())
}

// replaced are the functions with an implementation of their own.
func replaced() map[string]bool {
	h := &holder{}
	out := map[string]bool{}
	for _, m := range []template.FuncMap{boundedFuncs(h, helmFuncs()), statefulFuncs(h), bindTemplate(h, nil, nil)} {
		for name := range m {
			out[name] = true
		}
	}
	return out
}

// TestEveryFunctionIsBounded: every function of the final map is either
// replaced by a bounded implementation, harmless by its type, or reviewed.
func TestEveryFunctionIsBounded(t *testing.T) {
	funcs, _ := parseFuncs()
	repl := replaced()
	for name, fn := range funcs {
		typ := reflect.TypeOf(fn)
		if repl[name] {
			if _, ok := reviewed[name]; ok {
				t.Errorf("%s is replaced and reviewed: drop it from reviewed", name)
			}
			continue
		}
		if _, ok := reviewed[name]; !ok && risky(typ) {
			t.Errorf("%s (%v) is neither replaced by a bounded version nor reviewed: see funcguard.go", name, reflect.TypeOf(helmFuncs()[name]))
		}
	}
	for name := range reviewed {
		if _, ok := funcs[name]; !ok {
			t.Errorf("reviewed names %s, which is not a function any more", name)
		}
	}
}

// TestEveryFunctionChecksStop: a render stopped (deadline, cancel,
// abandoned) stops at its next function call, whatever the function.
func TestEveryFunctionChecksStop(t *testing.T) {
	h := &holder{}
	funcs := funcsFor(h)
	set := mustParse(t, map[string]string{"a.yaml": ""})
	for name, fn := range bindTemplate(h, set.tmpl, set.scalar) {
		funcs[name] = fn
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range funcs {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		h.st = newRenderState(Input{}, Budget{}.WithDefaults())
		h.st.meter.Expire()
		v := reflect.ValueOf(funcs[name])
		typ := v.Type()
		args := make([]reflect.Value, typ.NumIn())
		for i := range args {
			args[i] = reflect.Zero(typ.In(i))
		}
		var out []reflect.Value
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s panicked instead of stopping: %v", name, p)
				}
			}()
			if typ.IsVariadic() {
				out = v.CallSlice(args)
			} else {
				out = v.Call(args)
			}
		}()
		if out == nil {
			continue
		}
		if len(out) != 2 {
			t.Errorf("%s (%v) has no error result to stop with", name, typ)
			continue
		}
		err, _ := out[1].Interface().(error)
		if be, ok := errors.AsType[*BudgetError](err); !ok || be.Budget != BudgetTime {
			t.Errorf("%s returned %v after the deadline, want the time budget error", name, err)
		}
	}
}

// TestFunctionsChargeWhatTheyAllocate calls every function with large
// arguments (strings, and a list of empty maps where any value goes) and
// compares what a call that succeeds allocates with
// what it charged: a function that copies its arguments (a []byte
// conversion, an error that quotes them and is dropped) and is charged
// only its small result lets a loop allocate far past the budget
// (copies.go). Calls that fail end a render, so only successes count.
func TestFunctionsChargeWhatTheyAllocate(t *testing.T) {
	const size = 8 << 10
	blank := strings.Repeat("\n ", size/2)
	empties := make([]any, 500)
	for i := range empties {
		empties[i] = map[string]any{}
	}
	// Each shape: a string for string parameters, a value for the others.
	inputs := map[string]struct {
		str string
		val any
	}{
		"blank lines":    {blank, blank},
		"digits":         {strings.Repeat("9", size), strings.Repeat("9", size)},
		"500 empty maps": {blank, empties},
	}
	h := &holder{}
	funcs := funcsFor(h)
	names := slices.Sorted(maps.Keys(funcs))
	for _, name := range names {
		if slowFuncs[name] || strings.HasPrefix(name, "__") {
			continue
		}
		v := reflect.ValueOf(funcs[name])
		for shape, big := range inputs {
			args, ok := probeArgs(v.Type(), big.str, big.val)
			if !ok {
				continue
			}
			// Over the limit, the least of three calls: with -race,
			// sync.Pools are emptied at random, and a call may allocate a
			// pooled buffer anew.
			var allocated, charged, limit int64
			ok = true
			for try := 0; try < 3 && ok && (try == 0 || allocated > limit); try++ {
				h.st = newRenderState(Input{}, Budget{MaxOutputBytes: 1 << 30}.WithDefaults())
				a, c, succeeded := probeCall(h, v, args)
				if try == 0 || a < allocated {
					allocated, charged = a, c
				}
				limit, ok = allocMultiple*charged+4<<10, succeeded
			}
			if !ok {
				continue
			}
			if allocated > limit {
				t.Errorf("%s of %s: allocated %d bytes, charged %d (limit %d)", name, shape, allocated, charged, limit)
			}
		}
	}
}

// probeArgs fills a function's parameters: str for strings, val for
// values of any type, 1 for numbers, the epoch for times; false for other
// types.
func probeArgs(typ reflect.Type, str string, val any) ([]reflect.Value, bool) {
	var args []reflect.Value
	for i := range typ.NumIn() {
		in := typ.In(i)
		if typ.IsVariadic() && i == typ.NumIn()-1 {
			in = in.Elem()
		}
		switch {
		case in.Kind() == reflect.String:
			args = append(args, reflect.ValueOf(str))
		case in.Kind() == reflect.Interface:
			args = append(args, reflect.ValueOf(&val).Elem())
		case in.Kind() == reflect.Int:
			args = append(args, reflect.ValueOf(1))
		case in.Kind() == reflect.Float64:
			args = append(args, reflect.ValueOf(1.0))
		case in == timeType:
			args = append(args, reflect.ValueOf(time.Unix(0, 0)))
		default:
			return nil, false
		}
	}
	return args, true
}

// probeCall calls v once: the bytes allocated meanwhile, the bytes
// charged, and whether it succeeded.
func probeCall(h *holder, v reflect.Value, args []reflect.Value) (allocated, charged int64, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before, remaining := ms.TotalAlloc, h.meter().Remaining()
	res := v.Call(args)
	runtime.ReadMemStats(&ms)
	if err := res[len(res)-1]; !err.IsNil() {
		return 0, 0, false
	}
	return int64(ms.TotalAlloc - before), remaining - h.meter().Remaining(), true
}
