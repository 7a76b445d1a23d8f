package budget

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Shape is what a value holds, counted once per reference: a list that
// holds the same map twice counts the map twice, as printing it would.
type Shape struct {
	Bytes   int64 // the size printed (fmt, JSON or YAML print a shared value once per reference)
	Leaves  int64 // scalars and strings, map keys included: what a printf width pads, one by one
	Strs    int64 // bytes of the strings, map keys included
	Nodes   int64 // lists, maps and structs
	Entries int64 // map entries
	Elems   int64 // list elements
}

// Measure is the shape of v, or a budget error when printing it would not
// fit what is left; name is the function that prints it. indent is what
// each level of nesting adds to every line, for the formats that indent
// (YAML, indented JSON).
func (m *Meter) Measure(name string, v any, indent int64) (Shape, error) {
	if err := m.Check(); err != nil {
		return Shape{}, err
	}
	s, ok := measure(v, m.Remaining(), indent)
	if !ok {
		return s, m.Exceeded(fmt.Sprintf("%s of a value of more than %d bytes, %d left (a list or map holding itself, or the same one many times?)", name, s.Bytes, m.Remaining()))
	}
	return s, nil
}

// PrintNodeCost is what printing a list or map allocates beside its
// text: fmt sorts the keys of every map it prints (about 90 bytes for an
// empty map), and walking it takes a slot of the walk's stack.
const PrintNodeCost = 128

// PrintCost is what printing a value of this shape with fmt allocates:
// its text, and PrintNodeCost for each list or map.
func (s Shape) PrintCost() int64 { return AddSat(s.Bytes, MulSat(s.Nodes, PrintNodeCost)) }

// Walk checks that v can be printed within the budget left, and charges
// what printing it allocates beside the text (PrintNodeCost a list or
// map), which the caller charges once printed.
func (m *Meter) Walk(name string, v any) error {
	s, err := m.Measure(name, v, 0)
	if err != nil || s.Nodes == 0 {
		return err
	}
	return m.Charge(MulSat(s.Nodes, PrintNodeCost), func() string { return name + " of a value of " + strconv.FormatInt(s.Nodes, 10) + " lists and maps" })
}

// WalkAll walks the values of vs that are not scalars.
func (m *Meter) WalkAll(name string, vs []any) error {
	for _, v := range vs {
		switch v.(type) {
		case nil, string, bool, int, int64, float64:
			continue
		}
		if err := m.Walk(name, v); err != nil {
			return err
		}
	}
	return nil
}

// Size is the printed size of v, or false past limit.
func Size(v any, limit int64) (int64, bool) {
	s, ok := measure(v, limit, 0)
	return s.Bytes, ok
}

// measure walks v and gives up as soon as the printed size passes limit:
// the cost is bounded by limit, not by the expansion, and a value that
// holds itself simply runs over. YAML also folds long strings at their
// spaces, each fold a new indented line.
func measure(v any, limit, indent int64) (Shape, bool) {
	w := walker{limit: limit, indent: indent}
	w.visit(v, 0)
	// Only containers are deferred, so the stack holds the pending
	// containers, not every element: a list of a million numbers is
	// counted in place.
	for len(w.stack) > 0 && w.s.Bytes <= limit {
		it := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		w.expand(it.v, it.depth)
	}
	return w.s, w.s.Bytes <= limit
}

type walker struct {
	limit, indent int64
	s             Shape
	stack         []walkItem
}

type walkItem struct {
	v     any
	depth int64
}

// hidden is a value reached through an unexported struct field, which
// reflect can read but not turn back into an interface.
type hidden struct{ v reflect.Value }

// timeType is time.Time's type, which prints as a scalar.
var timeType = reflect.TypeFor[time.Time]()

func (w *walker) leaf(n int64) { w.s.Bytes += n; w.s.Leaves++ }

func (w *walker) str(s string, depth int64) {
	w.leaf(int64(len(s)) + 2)
	w.s.Strs += int64(len(s))
	if w.indent > 0 && len(s) > 0 {
		// Folded at spaces, or one line per line of a literal block.
		breaks := int64(strings.Count(s, " ") + strings.Count(s, "\n"))
		w.s.Bytes += MulSat(breaks, w.indent*depth+1)
	}
}

// visit counts a scalar at once and defers a container.
func (w *walker) visit(v any, depth int64) {
	w.s.Bytes += w.indent * depth
	switch x := v.(type) {
	case nil:
		w.leaf(4)
	case string:
		w.str(x, depth)
	case bool:
		w.leaf(5)
	case int, int64, int32, float64, float32, uint, uint64, time.Duration:
		w.leaf(8)
	case time.Time:
		w.leaf(64)
	default:
		w.stack = append(w.stack, walkItem{v, depth})
	}
}

func (w *walker) expand(v any, depth int64) {
	switch x := v.(type) {
	case []any:
		w.list(int64(len(x)))
		for _, e := range x {
			w.visit(e, depth+1)
		}
	case map[string]any:
		w.mapping(int64(len(x)))
		for k, e := range x {
			w.key(k)
			w.visit(e, depth+1)
		}
	case []string:
		w.list(int64(len(x)))
		for _, e := range x {
			w.str(e, depth+1)
		}
	case map[string]string:
		w.mapping(int64(len(x)))
		for k, e := range x {
			w.key(k)
			w.str(e, depth+1)
		}
	case []int:
		w.list(int64(len(x)))
		w.s.Leaves += int64(len(x))
		w.s.Bytes += 8 * int64(len(x))
	case hidden:
		w.value(x.v, depth)
	default:
		w.value(reflect.ValueOf(v), depth)
	}
}

func (w *walker) list(n int64) {
	w.s.Nodes++
	w.s.Elems += n
	w.s.Bytes += 2 + n
}

func (w *walker) mapping(n int64) {
	w.s.Nodes++
	w.s.Bytes += 2
	w.s.Entries += n
}

func (w *walker) key(k string) {
	w.s.Bytes += int64(len(k)) + 4
	w.s.Strs += int64(len(k))
	w.s.Leaves++
}

// value walks what the typed cases above do not know, through reflect:
// certificates (structs of strings), semver versions (pointers to
// structs), lists and maps of other element types.
func (w *walker) value(rv reflect.Value, depth int64) {
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			// fmt prints bytes as numbers, up to 4 bytes each.
			w.leaf(4*int64(rv.Len()) + 2)
			return
		}
		w.list(int64(rv.Len()))
		for i := range rv.Len() {
			w.visitValue(rv.Index(i), depth+1)
		}
	case reflect.Map:
		w.mapping(int64(rv.Len()))
		for it := rv.MapRange(); it.Next(); {
			w.s.Bytes += 4
			w.visitValue(it.Key(), depth+1)
			w.visitValue(it.Value(), depth+1)
		}
	case reflect.Pointer, reflect.Interface:
		if !rv.IsNil() {
			w.visitValue(rv.Elem(), depth)
		} else {
			w.leaf(5)
		}
	case reflect.Struct:
		w.structure(rv, depth)
	case reflect.String:
		w.str(rv.String(), depth)
	default:
		w.leaf(24) // a number, a boolean, a function or channel printed as an address
	}
}

func (w *walker) structure(rv reflect.Value, depth int64) {
	if rv.Type() == timeType {
		w.leaf(64)
		return
	}
	w.s.Nodes++
	w.s.Bytes += 2
	for i := range rv.NumField() {
		// %+v and %#v print field names.
		w.s.Bytes += int64(len(rv.Type().Field(i).Name)) + 2
		w.visitValue(rv.Field(i), depth+1)
	}
}

func (w *walker) visitValue(rv reflect.Value, depth int64) {
	if !rv.IsValid() {
		w.leaf(4)
		return
	}
	if rv.CanInterface() {
		w.visit(rv.Interface(), depth)
		return
	}
	switch rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Struct:
		w.s.Bytes += w.indent * depth
		w.stack = append(w.stack, walkItem{hidden{rv}, depth})
	default:
		w.value(rv, depth)
	}
}
