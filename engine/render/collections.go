package render

import (
	"fmt"
	"reflect"
	"strconv"
	"text/template"
)

// The functions that build lists and maps are charged what they allocate,
// before they allocate it, counted from their input: a list's length, the
// keys of a map, the n of until. A list copied on every call (append in a
// loop, keeping every intermediate) is charged on every call, so growth
// stops at the output budget however it is written.

func collectionFuncs(h *holder, base template.FuncMap) template.FuncMap {
	m := func() *meter { return &h.st.meter }
	sized := func(name string, n int64, per int64) (int64, func() string) {
		return mulSat(n, per), func() string { return fmt.Sprintf("%s of %d elements", name, n) }
	}
	// copying wraps sprig's functions that return a new list of at most
	// the input's length (compact, rest, initial, reverse).
	copying := func(name string) any {
		switch f := base[name].(type) {
		case func(any) []any:
			return func(list any) ([]any, error) {
				est, what := sized(name, listLen(list), elemCost)
				return bounded(m(), est, what, func() ([]any, error) { return f(list), nil }, nil)
			}
		case func(any) ([]any, error):
			return func(list any) ([]any, error) {
				est, what := sized(name, listLen(list), elemCost)
				return bounded(m(), est, what, func() ([]any, error) { return f(list) }, nil)
			}
		}
		panic("render: unexpected type of sprig's " + name)
	}
	chunk := func(name string) func(int, any) ([][]any, error) {
		f := base["mustChunk"].(func(int, any) ([][]any, error))
		return func(size int, list any) ([][]any, error) {
			n := listLen(list)
			var est int64
			if size > 0 {
				// A chunk is a slice header in the outer list and a list.
				est = (n+int64(size)-1)/int64(size)*(24+elemCost) + n*elemCost
			}
			return bounded(m(), est, func() string { return fmt.Sprintf("%s %d of %d elements", name, size, n) },
				func() ([][]any, error) { return f(size, list) }, nil)
		}
	}
	merge := func(name string) func(map[string]any, ...map[string]any) (any, error) {
		return func(dst map[string]any, srcs ...map[string]any) (any, error) {
			if err := h.st.mergeCost(name, dst, srcs); err != nil {
				return nil, err
			}
			switch f := base[name].(type) {
			case func(map[string]any, ...map[string]any) any:
				return f(dst, srcs...), nil
			case func(map[string]any, ...map[string]any) (any, error):
				return f(dst, srcs...)
			}
			panic("render: unexpected type of sprig's " + name)
		}
	}
	deepCopy := func(name string) func(any) (any, error) {
		return func(v any) (any, error) {
			s, err := h.st.measure(name, v, 0)
			if err != nil {
				return nil, err
			}
			return bounded(m(), copyCost(s), func() string { return fmt.Sprintf("%s of %d bytes", name, s.bytes) }, func() (any, error) {
				if f, ok := base[name].(func(any) any); ok {
					return f(v), nil
				}
				return base[name].(func(any) (any, error))(v)
			}, nil)
		}
	}
	list := func(items ...any) ([]any, error) {
		return items, m().charge(elemCost*int64(len(items)), func() string { return "list" })
	}
	return template.FuncMap{
		"until": func(n int) ([]int, error) {
			return bounded(m(), intCost*absInt(n), func() string { return "until " + strconv.Itoa(n) },
				func() ([]int, error) { return base["until"].(func(int) []int)(n), nil }, nil)
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			return bounded(m(), intCost*stepCount(start, stop, step), func() string { return fmt.Sprintf("untilStep %d %d %d", start, stop, step) },
				func() ([]int, error) { return base["untilStep"].(func(int, int, int) []int)(start, stop, step), nil }, nil)
		},
		"list":  list,
		"tuple": list,
		"dict": func(kv ...any) (map[string]any, error) {
			// Keys that are not strings are printed (strval), which may be
			// a large value.
			est := entryCost * int64((len(kv)+1)/2)
			for i := 0; i < len(kv); i += 2 {
				if _, ok := kv[i].(string); !ok {
					s, err := h.st.measure("dict", kv[i], 0)
					if err != nil {
						return nil, err
					}
					est = addSat(est, s.bytes)
				}
			}
			return bounded(m(), est, func() string { return fmt.Sprintf("dict of %d keys", (len(kv)+1)/2) },
				func() (map[string]any, error) { return base["dict"].(func(...any) map[string]any)(kv...), nil }, nil)
		},
		"concat": func(lists ...any) (any, error) {
			var n int64
			for _, l := range lists {
				n += listLen(l)
			}
			est, what := sized("concat", n, elemCost)
			return bounded(m(), est, what, func() (any, error) { return base["concat"].(func(...any) any)(lists...), nil }, nil)
		},
		"append":      func(list, v any) ([]any, error) { return h.st.appendTo("push", list, v, false) },
		"push":        func(list, v any) ([]any, error) { return h.st.appendTo("push", list, v, false) },
		"mustAppend":  func(list, v any) ([]any, error) { return h.st.appendTo("push", list, v, false) },
		"mustPush":    func(list, v any) ([]any, error) { return h.st.appendTo("push", list, v, false) },
		"prepend":     func(list, v any) ([]any, error) { return h.st.appendTo("prepend", list, v, true) },
		"mustPrepend": func(list, v any) ([]any, error) { return h.st.appendTo("prepend", list, v, true) },
		"set": func(d map[string]any, key string, value any) (map[string]any, error) {
			if err := m().check(); err != nil {
				return nil, err
			}
			if _, ok := d[key]; !ok {
				if err := m().charge(entryCost, func() string { return "set of a new key" }); err != nil {
					return nil, err
				}
			}
			d[key] = value
			return d, nil
		},
		"chunk":       chunk("chunk"),
		"mustChunk":   chunk("mustChunk"),
		"compact":     copying("compact"),
		"mustCompact": copying("mustCompact"),
		"rest":        copying("rest"),
		"mustRest":    copying("mustRest"),
		"initial":     copying("initial"),
		"mustInitial": copying("mustInitial"),
		"reverse":     copying("reverse"),
		"mustReverse": copying("mustReverse"),
		"keys": func(dicts ...map[string]any) ([]string, error) {
			var n int64
			for _, d := range dicts {
				n += int64(len(d))
			}
			est, what := sized("keys", n, elemCost)
			return bounded(m(), est, what, func() ([]string, error) { return base["keys"].(func(...map[string]any) []string)(dicts...), nil }, nil)
		},
		"values": func(d map[string]any) ([]any, error) {
			est, what := sized("values", int64(len(d)), elemCost)
			return bounded(m(), est, what, func() ([]any, error) { return base["values"].(func(map[string]any) []any)(d), nil }, nil)
		},
		"pluck": func(key string, dicts ...map[string]any) ([]any, error) {
			est, what := sized("pluck", int64(len(dicts)), elemCost)
			return bounded(m(), est, what, func() ([]any, error) {
				return base["pluck"].(func(string, ...map[string]any) []any)(key, dicts...), nil
			}, nil)
		},
		"pick": func(d map[string]any, keys ...string) (map[string]any, error) {
			est, what := sized("pick", int64(min(len(keys), len(d))), entryCost)
			return bounded(m(), est, what, func() (map[string]any, error) {
				return base["pick"].(func(map[string]any, ...string) map[string]any)(d, keys...), nil
			}, nil)
		},
		"omit": func(d map[string]any, keys ...string) (map[string]any, error) {
			est, what := sized("omit", int64(len(d)+len(keys)), entryCost)
			return bounded(m(), est, what, func() (map[string]any, error) {
				return base["omit"].(func(map[string]any, ...string) map[string]any)(d, keys...), nil
			}, nil)
		},
		"merge":              merge("merge"),
		"mustMerge":          merge("mustMerge"),
		"mergeOverwrite":     merge("mergeOverwrite"),
		"mustMergeOverwrite": merge("mustMergeOverwrite"),
		"deepCopy":           deepCopy("deepCopy"),
		"mustDeepCopy":       deepCopy("mustDeepCopy"),
	}
}

// appendTo is sprig's push (append) and prepend, with one allocation,
// charged first: sprig copies the list, then copies it again to prepend.
func (st *renderState) appendTo(verb string, list, v any, front bool) ([]any, error) {
	if err := st.meter.check(); err != nil {
		return nil, err
	}
	rv := reflect.ValueOf(list)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return nil, fmt.Errorf("Cannot %s on type %s", verb, k)
	}
	n := rv.Len()
	if err := st.meter.charge(elemCost*int64(n+1), func() string { return fmt.Sprintf("%s on a list of %d elements", verb, n) }); err != nil {
		return nil, err
	}
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
}

// mergeCost walks what merge reads (mergo recurses without cycle detection
// on values that are not addressable: a map holding itself would overflow
// the stack) and charges the entries it may add to dst.
func (st *renderState) mergeCost(name string, dst map[string]any, srcs []map[string]any) error {
	if err := st.walk(name, dst); err != nil {
		return err
	}
	var entries int64
	for _, src := range srcs {
		s, err := st.measure(name, src, 0)
		if err != nil {
			return err
		}
		entries = addSat(entries, s.entries)
	}
	return st.meter.charge(mulSat(entries, entryCost), func() string { return fmt.Sprintf("%s of %d entries", name, entries) })
}

// copyCost is what copying a value of shape s allocates: copystructure
// allocates about a hundred bytes for every value it walks.
func copyCost(s shape) int64 {
	return addSat(s.bytes, mulSat(s.leaves+s.elems+s.entries, 64)+mulSat(s.nodes, 256))
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
