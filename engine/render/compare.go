package render

import (
	"fmt"
	"reflect"
	"text/template"

	"github.com/tmplop/operator/engine/render/internal/budget"
)

// sprig's uniq, without and has compare elements with reflect.DeepEqual,
// uniq every element with every one kept before it: `until 300000 | uniq`
// is 45 billion comparisons in one call, which no deadline check can
// interrupt. The versions here give the same results in the same order in
// O(n) for the values lists are made of: strings, numbers, booleans and
// nil are compared through a map, where == and DeepEqual agree (an int is
// not an int64, NaN equals nothing, as in DeepEqual). Only lists, maps and
// other values == cannot compare are compared pairwise, with a deadline
// check at every comparison, and a call that would make more than
// maxCompares of them is refused before it starts.

// maxCompares bounds the pairwise comparisons of one call: about 0.2 s of
// comparing small maps on a loaded machine, well within the grace period
// of an abandoned render (see Set.runWith), so no single call outlives it.
const maxCompares = 1 << 19

// compareFuncs are uniq, without and has and their must variants; sprig's
// panic on a value that is not a list, which text/template turns into the
// same error as returning it.
func compareFuncs(h *holder) template.FuncMap {
	uniq := func(list any) ([]any, error) { return uniqList(h.meter(), list) }
	without := func(list any, omit ...any) ([]any, error) { return withoutList(h.meter(), list, omit) }
	has := func(needle, haystack any) (bool, error) { return hasElem(h.meter(), needle, haystack) }
	return template.FuncMap{
		"uniq": uniq, "mustUniq": uniq,
		"without": without, "mustWithout": without,
		"has": has, "mustHas": has,
	}
}

// scalarKey reports whether v is a value that a map compares exactly as
// reflect.DeepEqual does: nil and the scalars. Pointers, structs and
// arrays are comparable too, but == and DeepEqual differ on them.
func scalarKey(v any) bool {
	switch v.(type) {
	case nil, string, bool, int, int64, float64:
		return true
	}
	switch reflect.TypeOf(v).Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	}
	return false
}

// elements returns the elements of a list as []any: the list itself for
// a []any, a copy, bounded, for the typed lists other functions return.
func elements(m *budget.Meter, fn string, list any) ([]any, error) {
	if l, ok := list.([]any); ok {
		return l, nil
	}
	rv := reflect.ValueOf(list)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return nil, fmt.Errorf("Cannot find %s on type %s", fn, k)
	}
	n := rv.Len()
	return budget.Bounded(m, 2*budget.ElemCost*int64(n), func() string { return fmt.Sprintf("%s of %d elements", fn, n) },
		func() ([]any, error) {
			out := make([]any, n)
			for i := range out {
				out[i] = rv.Index(i).Interface()
			}
			return out, nil
		}, nil)
}

// pairs is how many comparisons a call would make, refused past maxCompares.
func pairs(fn string, n int64, what string) error {
	return budget.TooMuchWork(n, maxCompares, func() string { return fmt.Sprintf("%s: %d comparisons of %s", fn, n, what) })
}

// uniqList is sprig's uniq: the list and a map of the scalars seen are
// bounded, and the pairs of other values refused past maxCompares.
func uniqList(m *budget.Meter, list any) ([]any, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	elems, err := elements(m, "uniq", list)
	if err != nil {
		return nil, err
	}
	var scalars, others int64
	for _, e := range elems {
		if scalarKey(e) {
			scalars++
		} else {
			others++
		}
	}
	if err := pairs("uniq", others*(others-1)/2, fmt.Sprintf("%d lists or maps", others)); err != nil {
		return nil, err
	}
	n := int64(len(elems))
	return budget.Bounded(m, budget.ElemCost*n+budget.EntryCost*scalars, func() string { return fmt.Sprintf("uniq of %d elements", n) },
		func() ([]any, error) { return uniqOf(m, elems, scalars) }, nil)
}

// uniqOf keeps the first of equal elements, checking the deadline at
// every pairwise comparison.
func uniqOf(m *budget.Meter, elems []any, scalars int64) ([]any, error) {
	out := make([]any, 0, len(elems))
	seen := make(map[any]struct{}, scalars)
	var kept []any
next:
	for _, e := range elems {
		if scalarKey(e) {
			if _, dup := seen[e]; !dup {
				seen[e] = struct{}{}
				out = append(out, e)
			}
			continue
		}
		for _, k := range kept {
			if err := m.Check(); err != nil {
				return nil, err
			}
			if reflect.DeepEqual(e, k) {
				continue next
			}
		}
		kept = append(kept, e)
		out = append(out, e)
	}
	return out, nil
}

// withoutList is sprig's without: the list and a map of the scalars to
// drop are bounded, and the pairs of other values refused past
// maxCompares.
func withoutList(m *budget.Meter, list any, omit []any) ([]any, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	elems, err := elements(m, "without", list)
	if err != nil {
		return nil, err
	}
	drop := make(map[any]struct{}, len(omit))
	var dropOthers []any
	for _, o := range omit {
		if scalarKey(o) {
			drop[o] = struct{}{}
		} else {
			dropOthers = append(dropOthers, o)
		}
	}
	var others int64
	if len(dropOthers) > 0 {
		for _, e := range elems {
			if !scalarKey(e) {
				others++
			}
		}
	}
	if err := pairs("without", others*int64(len(dropOthers)), fmt.Sprintf("%d lists or maps with %d", others, len(dropOthers))); err != nil {
		return nil, err
	}
	n := int64(len(elems))
	return budget.Bounded(m, budget.ElemCost*n+budget.EntryCost*int64(len(omit)), func() string { return fmt.Sprintf("without of %d elements", n) },
		func() ([]any, error) { return withoutOf(m, elems, drop, dropOthers) }, nil)
}

// withoutOf keeps the elements neither in drop nor equal to one of
// others, checking the deadline at every pairwise comparison.
func withoutOf(m *budget.Meter, elems []any, drop map[any]struct{}, others []any) ([]any, error) {
	out := make([]any, 0, len(elems))
next:
	for _, e := range elems {
		if scalarKey(e) {
			if _, dup := drop[e]; !dup {
				out = append(out, e)
			}
			continue
		}
		for _, o := range others {
			if err := m.Check(); err != nil {
				return nil, err
			}
			if reflect.DeepEqual(e, o) {
				continue next
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// hasElem is sprig's has. It needs no refusal: one comparison per
// element, each checking the deadline when it may be long (a list or map
// needle).
func hasElem(m *budget.Meter, needle, haystack any) (bool, error) {
	if err := m.Check(); err != nil {
		return false, err
	}
	if haystack == nil {
		return false, nil
	}
	rv := reflect.ValueOf(haystack)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return false, fmt.Errorf("Cannot find has on type %s", k)
	}
	if l, ok := haystack.([]any); ok && scalarKey(needle) {
		for _, e := range l {
			// Safe: needle is comparable, so == never meets two
			// uncomparable values of one type.
			if e == needle {
				return true, nil
			}
		}
		return false, nil
	}
	if scalarKey(needle) && rv.Type().Elem().Kind() != reflect.Interface {
		// A typed list: only elements of the needle's type can be equal,
		// compared without boxing each one.
		nv := reflect.ValueOf(needle)
		if needle == nil || nv.Type() != rv.Type().Elem() {
			return false, nil
		}
		for i := range rv.Len() {
			if rv.Index(i).Equal(nv) {
				return true, nil
			}
		}
		return false, nil
	}
	for i := range rv.Len() {
		if err := m.Check(); err != nil {
			return false, err
		}
		if reflect.DeepEqual(needle, rv.Index(i).Interface()) {
			return true, nil
		}
	}
	return false, nil
}
