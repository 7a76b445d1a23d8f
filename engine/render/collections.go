package render

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"text/template"

	"github.com/tmplop/operator/engine/render/internal/budget"
)

// The functions that build lists and maps are charged what they allocate,
// before they allocate it, counted from their input: a list's length, the
// keys of a map, the n of until. A list copied on every call (append in a
// loop, keeping every intermediate) is charged on every call, so growth
// stops at the output budget however it is written.

func collectionFuncs(h *holder, base template.FuncMap) template.FuncMap {
	out := listFuncs(h, base)
	maps.Copy(out, mapFuncs(h, base))
	return out
}

// sized is the estimate of a collection of n elements of per bytes each,
// and its description.
func sized(name string, n int64, per int64) (int64, func() string) {
	return budget.MulSat(n, per), func() string { return fmt.Sprintf("%s of %d elements", name, n) }
}

// listFuncs are the functions that build lists.
func listFuncs(h *holder, base template.FuncMap) template.FuncMap {
	list := func(items ...any) ([]any, error) {
		// text/template has built items already: charged after the fact.
		return items, h.meter().Charge(budget.ElemCost*int64(len(items)), func() string { return "list" })
	}
	push := func(list, v any) ([]any, error) { return appendTo(h.meter(), "push", list, v, false) }
	prepend := func(list, v any) ([]any, error) { return appendTo(h.meter(), "prepend", list, v, true) }
	return template.FuncMap{
		"until": func(n int) ([]int, error) {
			return budget.Bounded(h.meter(), budget.IntCost*absInt(n), func() string { return "until " + strconv.Itoa(n) },
				func() ([]int, error) { return base["until"].(func(int) []int)(n), nil }, nil)
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			return budget.Bounded(h.meter(), budget.IntCost*stepCount(start, stop, step), func() string { return fmt.Sprintf("untilStep %d %d %d", start, stop, step) },
				func() ([]int, error) { return base["untilStep"].(func(int, int, int) []int)(start, stop, step), nil }, nil)
		},
		"list":  list,
		"tuple": list,
		"concat": func(lists ...any) (any, error) {
			var n int64
			for _, l := range lists {
				n += listLen(l)
			}
			est, what := sized("concat", n, budget.ElemCost)
			return budget.Bounded(h.meter(), est, what, func() (any, error) { return base["concat"].(func(...any) any)(lists...), nil }, nil)
		},
		"append": push, "push": push, "mustAppend": push, "mustPush": push,
		"prepend": prepend, "mustPrepend": prepend,
		"chunk":       chunk(h, base, "chunk"),
		"mustChunk":   chunk(h, base, "mustChunk"),
		"compact":     copying(h, base, "compact"),
		"mustCompact": copying(h, base, "mustCompact"),
		"rest":        copying(h, base, "rest"),
		"mustRest":    copying(h, base, "mustRest"),
		"initial":     copying(h, base, "initial"),
		"mustInitial": copying(h, base, "mustInitial"),
		"reverse":     copying(h, base, "reverse"),
		"mustReverse": copying(h, base, "mustReverse"),
	}
}

// copying wraps sprig's functions that return a new list of at most the
// input's length (compact, rest, initial, reverse).
func copying(h *holder, base template.FuncMap, name string) any {
	switch f := base[name].(type) {
	case func(any) []any:
		return func(list any) ([]any, error) {
			est, what := sized(name, listLen(list), budget.ElemCost)
			return budget.Bounded(h.meter(), est, what, func() ([]any, error) { return f(list), nil }, nil)
		}
	case func(any) ([]any, error):
		return func(list any) ([]any, error) {
			est, what := sized(name, listLen(list), budget.ElemCost)
			return budget.Bounded(h.meter(), est, what, func() ([]any, error) { return f(list) }, nil)
		}
	}
	panic("render: unexpected type of sprig's " + name)
}

// chunk is sprig's chunk and mustChunk.
func chunk(h *holder, base template.FuncMap, name string) func(int, any) ([][]any, error) {
	f := base["mustChunk"].(func(int, any) ([][]any, error))
	return func(size int, list any) ([][]any, error) {
		n := listLen(list)
		var est int64
		if size > 0 {
			// A chunk is a slice header in the outer list and a list.
			est = (n+int64(size)-1)/int64(size)*(24+budget.ElemCost) + n*budget.ElemCost
		}
		return budget.Bounded(h.meter(), est, func() string { return fmt.Sprintf("%s %d of %d elements", name, size, n) },
			func() ([][]any, error) { return f(size, list) }, nil)
	}
}

// mapFuncs are the functions that build maps, or lists from maps.
func mapFuncs(h *holder, base template.FuncMap) template.FuncMap {
	return template.FuncMap{
		"dict": dict(h, base),
		"set": func(d map[string]any, key string, value any) (map[string]any, error) {
			if err := h.meter().Check(); err != nil {
				return nil, err
			}
			if _, ok := d[key]; !ok {
				if err := h.meter().Charge(budget.EntryCost, func() string { return "set of a new key" }); err != nil {
					return nil, err
				}
			}
			d[key] = value
			return d, nil
		},
		// sprig's keys and values list a map in Go's random order, so a
		// template that prints them unsorted would print another child at
		// every render; these list each map in the order of its keys, one
		// of the orders sprig's can give.
		"keys": func(dicts ...map[string]any) ([]string, error) {
			var n int64
			for _, d := range dicts {
				n += int64(len(d))
			}
			est, what := sized("keys", n, budget.ElemCost)
			return budget.Bounded(h.meter(), est, what, func() ([]string, error) {
				out := make([]string, 0, n)
				for _, d := range dicts {
					out = append(out, slices.Sorted(maps.Keys(d))...)
				}
				return out, nil
			}, nil)
		},
		"values": func(d map[string]any) ([]any, error) {
			est, what := sized("values", int64(len(d)), budget.ElemCost)
			return budget.Bounded(h.meter(), est, what, func() ([]any, error) {
				out := make([]any, 0, len(d))
				for _, k := range slices.Sorted(maps.Keys(d)) {
					out = append(out, d[k])
				}
				return out, nil
			}, nil)
		},
		"pluck": func(key string, dicts ...map[string]any) ([]any, error) {
			est, what := sized("pluck", int64(len(dicts)), budget.ElemCost)
			return budget.Bounded(h.meter(), est, what, func() ([]any, error) {
				return base["pluck"].(func(string, ...map[string]any) []any)(key, dicts...), nil
			}, nil)
		},
		"pick": func(d map[string]any, keys ...string) (map[string]any, error) {
			est, what := sized("pick", int64(min(len(keys), len(d))), budget.EntryCost)
			return budget.Bounded(h.meter(), est, what, func() (map[string]any, error) {
				return base["pick"].(func(map[string]any, ...string) map[string]any)(d, keys...), nil
			}, nil)
		},
		"omit": func(d map[string]any, keys ...string) (map[string]any, error) {
			est, what := sized("omit", int64(len(d)+len(keys)), budget.EntryCost)
			return budget.Bounded(h.meter(), est, what, func() (map[string]any, error) {
				return base["omit"].(func(map[string]any, ...string) map[string]any)(d, keys...), nil
			}, nil)
		},
		"merge":              merge(h, base, "merge"),
		"mustMerge":          merge(h, base, "mustMerge"),
		"mergeOverwrite":     merge(h, base, "mergeOverwrite"),
		"mustMergeOverwrite": merge(h, base, "mustMergeOverwrite"),
		"deepCopy":           deepCopy(h, base, "deepCopy"),
		"mustDeepCopy":       deepCopy(h, base, "mustDeepCopy"),
	}
}

// dict is sprig's dict. Keys that are not strings are printed (strval),
// which may be a large value.
func dict(h *holder, base template.FuncMap) func(...any) (map[string]any, error) {
	f := base["dict"].(func(...any) map[string]any)
	return func(kv ...any) (map[string]any, error) {
		est := budget.EntryCost * int64((len(kv)+1)/2)
		for i := 0; i < len(kv); i += 2 {
			if _, ok := kv[i].(string); !ok {
				s, err := h.meter().Measure("dict", kv[i], 0)
				if err != nil {
					return nil, err
				}
				est = budget.AddSat(est, s.PrintCost())
			}
		}
		return budget.Bounded(h.meter(), est, func() string { return fmt.Sprintf("dict of %d keys", (len(kv)+1)/2) },
			func() (map[string]any, error) { return f(kv...), nil }, nil)
	}
}

// merge is sprig's merge and mergeOverwrite, and their must variants,
// charged for the entries they may add to dst.
func merge(h *holder, base template.FuncMap, name string) func(map[string]any, ...map[string]any) (any, error) {
	call := func(dst map[string]any, srcs []map[string]any) (any, error) {
		switch f := base[name].(type) {
		case func(map[string]any, ...map[string]any) any:
			return f(dst, srcs...), nil
		case func(map[string]any, ...map[string]any) (any, error):
			return f(dst, srcs...)
		}
		panic("render: unexpected type of sprig's " + name)
	}
	return func(dst map[string]any, srcs ...map[string]any) (any, error) {
		m := h.meter()
		entries, err := mergeEntries(m, name, dst, srcs)
		if err != nil {
			return nil, err
		}
		return budget.Bounded(m, budget.MulSat(entries, budget.EntryCost), func() string { return fmt.Sprintf("%s of %d entries", name, entries) },
			func() (any, error) { return call(dst, srcs) }, nil)
	}
}

// deepCopy is sprig's deepCopy and mustDeepCopy, charged what copying
// allocates.
func deepCopy(h *holder, base template.FuncMap, name string) func(any) (any, error) {
	return func(v any) (any, error) {
		s, err := h.meter().Measure(name, v, 0)
		if err != nil {
			return nil, err
		}
		return budget.Bounded(h.meter(), copyCost(s), func() string { return fmt.Sprintf("%s of %d bytes", name, s.Bytes) }, func() (any, error) {
			if f, ok := base[name].(func(any) any); ok {
				return f(v), nil
			}
			return base[name].(func(any) (any, error))(v)
		}, nil)
	}
}

// appendTo is sprig's push (append) and prepend, with one allocation,
// bounded: sprig copies the list, then copies it again to prepend.
func appendTo(m *budget.Meter, verb string, list, v any, front bool) ([]any, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	rv := reflect.ValueOf(list)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return nil, fmt.Errorf("Cannot %s on type %s", verb, k)
	}
	n := rv.Len()
	return budget.Bounded(m, budget.ElemCost*int64(n+1), func() string { return fmt.Sprintf("%s on a list of %d elements", verb, n) },
		func() ([]any, error) {
			out := make([]any, n+1)
			at := out[:n]
			if front {
				out[0], at = v, out[1:]
			} else {
				out[n] = v
			}
			if l, ok := list.([]any); ok {
				copy(at, l)
			} else {
				for i := range at {
					at[i] = rv.Index(i).Interface()
				}
			}
			return out, nil
		}, nil)
}

// mergeEntries walks what merge reads (mergo recurses without cycle
// detection on values that are not addressable: a map holding itself
// would overflow the stack) and counts the entries it may add to dst.
func mergeEntries(m *budget.Meter, name string, dst map[string]any, srcs []map[string]any) (int64, error) {
	if err := m.Walk(name, dst); err != nil {
		return 0, err
	}
	var entries int64
	for _, src := range srcs {
		s, err := m.Measure(name, src, 0)
		if err != nil {
			return 0, err
		}
		entries = budget.AddSat(entries, s.Entries)
	}
	return entries, nil
}

// copyCost is what copying a value of shape s allocates: copystructure
// allocates about a hundred bytes for every value it walks.
func copyCost(s budget.Shape) int64 {
	return budget.AddSat(s.Bytes, budget.MulSat(s.Leaves+s.Elems+s.Entries, 64)+budget.MulSat(s.Nodes, 256))
}

// listLen is the length of a list, or 0 for anything else (which the
// function then refuses).
func listLen(v any) int64 {
	if l, ok := v.([]any); ok {
		return int64(len(l))
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		return int64(rv.Len())
	}
	return 0
}

// stepCount is how many elements untilStep(start, stop, step) returns.
func stepCount(start, stop, step int) int64 {
	span, st := int64(stop)-int64(start), int64(step)
	if st == 0 || (span > 0) != (st > 0) || span == 0 {
		return 0
	}
	return absInt64(span)/absInt64(st) + 1
}
