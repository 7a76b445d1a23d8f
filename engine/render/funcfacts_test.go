package render

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"text/template"
	"time"
)

// unprobed are the functions the probe of TestFunctionFacts cannot call
// with arguments it makes, with what they are by review: a function added
// by a sprig upgrade that the probe cannot call fails the test until it
// is reviewed here.
var unprobed = map[string]string{
	"fail":                     "always fails; prints nothing",
	"include":                  "runs a template of the folder: prints what it prints (printsLines)",
	"tpl":                      "runs a template string: prints what it prints (printsLines)",
	"dig":                      "returns a value of its last argument, a map: no lines of its own, not random",
	"genSignedCert":            "needs a CA from genCA: random (a new key), prints a certificate (printsLines)",
	"genSignedCertWithKey":     "needs a CA from genCA: random (a new serial), prints a certificate (printsLines)",
	"genCAWithKey":             "needs a PEM key: random (a new serial), prints a certificate (printsLines)",
	"genSelfSignedCertWithKey": "needs a PEM key: random (a new serial), prints a certificate (printsLines)",
	"buildCustomCert":          "needs a base64 certificate and key: prints them back (printsLines), not random",
	"decryptAES":               "needs what encryptAES printed: decoded bytes, any lines (printsLines), not random",
}

// profile is the arguments of one probe: str for string parameters, val
// for parameters of any type, list for lists.
type profile struct {
	str  string
	val  any
	list []any
}

// probeProfiles are the arguments a probe tries: words; a version and an
// address, with a time (the machine's now, so that a function that reads
// the machine's clock sees it move); JSON, with a map and a list of
// several entries (whose printing may take lines); a date modifier, with a
// number.
func probeProfiles(now time.Time) []profile {
	return []profile{
		{str: "abc def ghi jkl mno pqr stu", val: "abc def ghi jkl mno pqr stu", list: []any{"a", "b", "c"}},
		{str: "1.2.3", val: now, list: []any{"127.0.0.1"}},
		{str: `{"a": "b", "c": ["d"]}`, val: map[string]any{"a": "b", "c": map[string]any{"d": "e"}, "f": []any{"g", "h"}}, list: []any{"a", map[string]any{"b": "c"}}},
		{str: "+1h", val: []any{"a", map[string]any{"b": "c"}, "d"}, list: []any{}},
		{str: "abc", val: int64(3), list: []any{"a"}},
	}
}

// probeValue is a value of profile p for the i-th parameter, of type in;
// false for a type the probe does not make.
func probeValue(in reflect.Type, i int, p profile, now time.Time) (reflect.Value, bool) {
	switch {
	case in == timeType:
		return reflect.ValueOf(now), true
	case in.Kind() == reflect.Interface:
		return reflect.ValueOf(&p.val).Elem(), true
	case in.Kind() == reflect.String:
		return reflect.ValueOf(p.str).Convert(in), true
	case in.Kind() == reflect.Bool:
		return reflect.ValueOf(true).Convert(in), true
	case in.Kind() >= reflect.Int && in.Kind() <= reflect.Uint64:
		return reflect.ValueOf(8 + 16*i).Convert(in), true // distinct: randInt needs min < max
	case in.Kind() == reflect.Float32 || in.Kind() == reflect.Float64:
		return reflect.ValueOf(2.5).Convert(in), true
	case in == reflect.TypeFor[[]any]():
		return reflect.ValueOf(p.list), true
	case in == reflect.TypeFor[[]string]():
		return reflect.ValueOf([]string{"a", "b", "c"}), true
	case in == reflect.TypeFor[map[string]any]():
		return reflect.ValueOf(map[string]any{"a": "b", "c": "d"}), true
	}
	return reflect.Value{}, false
}

// probe is what calls of one function showed.
type probe struct {
	called  bool // some call succeeded
	differs bool // two calls with the same arguments returned different values
	lines   bool // a call printed more than one line
	marked  bool // the render recorded the function as nondeterministic
}

// probeFunc calls the function name of funcs (bound to h) with the
// arguments of every profile: twice with the same render clock, the
// machine's clock an hour later (a synctest bubble's), then with the
// render clock a day later.
func probeFunc(h *holder, funcs template.FuncMap, name string, t0 time.Time) probe {
	var p probe
	v := reflect.ValueOf(funcs[name])
	typ := v.Type()
	for _, prof := range probeProfiles(time.Now()) {
		args := make([]reflect.Value, 0, typ.NumIn())
		ok := true
		for i := range typ.NumIn() {
			in := typ.In(i)
			if typ.IsVariadic() && i == typ.NumIn()-1 {
				in = in.Elem()
			}
			a, made := probeValue(in, i, prof, time.Now())
			ok = ok && made
			args = append(args, a)
		}
		if !ok {
			continue
		}
		var outs []string
		for _, renderNow := range []time.Time{t0, t0, t0, t0.Add(24 * time.Hour)} {
			h.st = newRenderState(Input{Now: renderNow}, Budget{MaxOutputBytes: 1 << 30}.WithDefaults())
			out, ok := probeOnce(v, args)
			if !ok {
				break
			}
			p.marked = p.marked || slices.Contains(h.st.random[""], name)
			outs = append(outs, out)
			time.Sleep(time.Hour) // the bubble's clock: instant
		}
		if len(outs) == 0 {
			continue
		}
		p.called = true
		for _, o := range outs {
			p.differs = p.differs || o != outs[0]
			p.lines = p.lines || strings.ContainsAny(o, "\n\r")
		}
	}
	return p
}

// probeOnce calls v with args and returns what a template prints of its
// result; false when it failed or panicked.
func probeOnce(v reflect.Value, args []reflect.Value) (out string, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	res := v.Call(args)
	if len(res) == 2 && !res[1].IsNil() {
		return "", false
	}
	r := res[0]
	for r.Kind() == reflect.Interface || r.Kind() == reflect.Pointer {
		if r.IsNil() {
			return "<nil>", true
		}
		r = r.Elem()
	}
	return fmt.Sprint(r.Interface()), true
}

// TestFunctionFacts ties the facts of funcfacts.go to the function map:
// every name they list is a function templates can call, and a probe of
// every function finds none that differs from call to call (randomness,
// the machine's or the render's clock) and is not in nondeterministic, or
// is in it and not recorded by the render, nor any that prints lines of
// its own and is not in printsLines. A function the probe cannot call is
// reviewed in unprobed.
func TestFunctionFacts(t *testing.T) {
	funcs, _ := parseFuncs()
	for _, list := range []map[string]bool{printsLines, boolSet(nondeterministic), boolSet(unprobed)} {
		for name := range list {
			if _, ok := funcs[name]; !ok {
				t.Errorf("%s is listed in funcfacts.go or unprobed, and is no function templates can call", name)
			}
		}
	}
	synctest.Test(t, func(t *testing.T) {
		h := &holder{}
		bound := funcsFor(h)
		t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
		for _, name := range slices.Sorted(maps.Keys(funcs)) {
			if strings.HasPrefix(name, "__") {
				continue // the guards' own (guard.go)
			}
			why, reviewed := unprobed[name]
			if _, isBound := bound[name]; !isBound {
				if !reviewed {
					t.Errorf("%s is bound per template (bindTemplate): review it in unprobed", name)
				}
				continue
			}
			p := probeFunc(h, bound, name, t0)
			switch {
			case !p.called && !reviewed:
				t.Errorf("%s (%v): no probe could call it: review it in unprobed", name, reflect.TypeOf(funcs[name]))
			case p.called && reviewed:
				t.Errorf("%s is in unprobed (%s), and the probe calls it: drop it from unprobed", name, why)
			}
			if p.differs && nondeterministic[name] == 0 {
				t.Errorf("%s returned different values for the same arguments, and is not in nondeterministic", name)
			}
			if p.differs && !p.marked {
				t.Errorf("%s returned different values for the same arguments, and the render did not record it (Result.Nondeterministic)", name)
			}
			if p.lines && !printsLines[name] {
				t.Errorf("%s printed lines of its own, and is not in printsLines", name)
			}
		}
	})
}

func boolSet[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
