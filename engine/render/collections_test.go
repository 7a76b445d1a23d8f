package render

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// call calls fn with args as text/template would, and returns its result
// and whether it failed (an error or a panic).
func call(fn any, args ...any) (res any, failed bool) {
	v := reflect.ValueOf(fn)
	typ := v.Type()
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		pt := typ.In(min(i, typ.NumIn()-1))
		if typ.IsVariadic() && i >= typ.NumIn()-1 {
			pt = pt.Elem()
		}
		if a == nil {
			in[i] = reflect.Zero(pt)
		} else {
			in[i] = reflect.ValueOf(a)
		}
	}
	defer func() {
		if p := recover(); p != nil {
			res, failed = fmt.Sprint(p), true
		}
	}()
	out := v.Call(in)
	if len(out) == 2 && !out[1].IsNil() {
		return out[1].Interface(), true
	}
	return out[0].Interface(), false
}

// TestReplacementsMatchSprig: the bounded replacements return what sprig's
// functions return, on ordinary and odd inputs alike.
func TestReplacementsMatchSprig(t *testing.T) {
	h := &holder{}
	ours := funcsFor(h)
	base := helmFuncs()
	m := func() map[string]any {
		return map[string]any{"a": int64(1), "b": []any{"x"}, "c": map[string]any{"d": 1.5}}
	}
	mixed := func() []any {
		return []any{1, 2, 1, "a", "a", 1.0, int64(1), nil, nil, m(), m(), []any{1}, []any{1}, math.NaN(), math.NaN(),
			math.Copysign(0, -1), 0.0, true, true, map[string]any{}, []any{}, "", uint8(1)}
	}
	lists := func() [][]any {
		return [][]any{{mixed()}, {[]int{3, 1, 3, 2}}, {[]string{"b", "a", "b"}}, {[]any{}}, {nil}, {"not a list"}, {m()}}
	}
	cases := map[string][]func() []any{}
	add := func(names string, args ...func() []any) {
		for _, n := range strings.Fields(names) {
			cases[n] = append(cases[n], args...)
		}
	}
	for i := range lists() {
		// Fresh values for every call: sprig's sortAlpha sorts a []string in place.
		l := func() []any { return lists()[i] }
		add("uniq mustUniq compact mustCompact rest mustRest initial mustInitial reverse mustReverse sortAlpha toStrings", l)
		add("append push mustAppend mustPush prepend mustPrepend", func() []any { return append(l(), m()) })
		add("without mustWithout", func() []any { return append(l(), 1, "a", m(), nil, []any{1}) })
		for _, needle := range []func() any{func() any { return 1 }, func() any { return m() }, func() any { return nil },
			func() any { return "b" }, func() any { return int64(1) }, func() any { return 3 }} {
			add("has mustHas", func() []any { return append([]any{needle()}, l()...) })
		}
		for _, size := range []int{-1, 0, 1, 2, 5} {
			add("chunk mustChunk", func() []any { return append([]any{size}, l()...) })
		}
		add("join", func() []any { return append([]any{", "}, l()...) })
	}
	add("keys", func() []any { return []any{m(), map[string]any{"z": 1}} }, func() []any { return nil })
	add("values", func() []any { return []any{map[string]any{"z": 1}} })
	add("pluck", func() []any { return []any{"a", m(), map[string]any{}, m()} })
	add("pick omit", func() []any { return []any{m(), "a", "c", "zz"} }, func() []any { return []any{m()} })
	add("merge mustMerge mergeOverwrite mustMergeOverwrite", func() []any { return []any{m(), map[string]any{"a": 2, "e": 3}, m()} })
	add("deepCopy mustDeepCopy", func() []any { return []any{m()} }, func() []any { return []any{mixed()} })
	add("dict", func() []any { return []any{"a", 1, "b"} }, func() []any { return []any{1, 2, true, m()} })
	add("list tuple", func() []any { return []any{1, "a", nil} })
	add("concat", func() []any { return []any{[]any{1}, []int{2, 3}, []string{"x"}} })
	add("set", func() []any { return []any{m(), "a", 2} }, func() []any { return []any{m(), "new", 2} })
	for _, sep := range []string{"", ",", "ab", "é"} {
		for _, s := range []string{"", "a,b,,c", "ababab", "é,é", "\xff\xfe,"} {
			add("split splitList", func() []any { return []any{sep, s} })
			for _, n := range []int{-1, 0, 1, 2, 10} {
				add("splitn", func() []any { return []any{sep, n, s} })
			}
		}
	}
	for _, re := range []string{"", "a*", "b", "[,]", "(", "^a", `\b`, "x*?"} {
		for _, s := range []string{"", "abacab", "a,b,,c", "xxx", "ééa"} {
			add("regexMatch mustRegexMatch regexFind mustRegexFind", func() []any { return []any{re, s} })
			add("regexReplaceAll mustRegexReplaceAll regexReplaceAllLiteral mustRegexReplaceAllLiteral",
				func() []any { return []any{re, s, "<$0>"} })
			for _, n := range []int{-1, 0, 1, 2, 3, 100} {
				add("regexSplit mustRegexSplit regexFindAll mustRegexFindAll", func() []any { return []any{re, s, n} })
			}
		}
	}
	for _, doc := range []string{"", "a: 1", "[1, 2]", "{", "a: &x [1]\nb: *x\n", `{"a": [1, {"b": null}]}`, "- a\n- b"} {
		add("fromYaml fromYamlArray fromJson fromJsonArray mustFromJson", func() []any { return []any{doc} })
	}
	add("toJson toRawJson mustToJson mustToRawJson toPrettyJson mustToPrettyJson toYaml",
		func() []any { return []any{m()} }, func() []any { return []any{mixed()[:13]} }, func() []any { return []any{"a b"} })
	for _, zone := range []string{"", "UTC", "Local", "Europe/Paris", "not a zone", "00000000000"} {
		for _, date := range []any{int64(86400 * 365), 3600, int32(7)} {
			add("dateInZone date_in_zone", func() []any { return []any{"2006-01-02 15:04 MST", date, zone} })
			add("htmlDateInZone", func() []any { return []any{date, zone} })
		}
	}
	add("until", func() []any { return []any{5} }, func() []any { return []any{-3} }, func() []any { return []any{0} })
	add("untilStep", func() []any { return []any{0, 10, 3} }, func() []any { return []any{10, 0, -4} }, func() []any { return []any{0, 10, -1} })
	add("seq", func() []any { return []any{3} }, func() []any { return []any{1, 2, 9} }, func() []any { return []any{5, -2, 0} })

	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range cases {
			if !yield(n) {
				return
			}
		}
	}) {
		for _, args := range cases[name] {
			h.st = newRenderState(Input{}, Budget{}.WithDefaults())
			got, gotFailed := call(ours[name], args()...)
			want, wantFailed := call(base[name], args()...)
			if gotFailed || wantFailed {
				if gotFailed != wantFailed {
					t.Errorf("%s%v: failed %v (%v), sprig's failed %v (%v)", name, args(), gotFailed, got, wantFailed, want)
				}
				continue
			}
			if name == "keys" || name == "values" {
				got, want = fmt.Sprint(sortedAny(got)), fmt.Sprint(sortedAny(want))
			}
			if !reflect.DeepEqual(got, want) && fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
				t.Errorf("%s%v = %#v, sprig's %#v", name, args(), got, want)
			}
		}
	}
}

func sortedAny(v any) []string {
	var out []string
	rv := reflect.ValueOf(v)
	for i := range rv.Len() {
		out = append(out, fmt.Sprint(rv.Index(i).Interface()))
	}
	slices.Sort(out)
	return out
}
