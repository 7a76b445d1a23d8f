package render

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/tmplop/operator/engine/render/internal/budget"
)

// renderState is what the functions of one render share: its meter, its
// Input's lookup and clock, and what the render reports besides its output
// (requeueAfter, empty lists, nondeterministic calls). A render's
// functions reach it through the holder of the instance the render checked
// out (instance.go); text/template executes a template on the calling
// goroutine only, so no lock is needed, except for file, which the caller
// reads when it abandons a render.
//
// Each render has a state of its own, never reused: the deadline's timer,
// the context's callback and a caller that abandons the render may still
// reach it after the render ended, and must not stop the next one.
type renderState struct {
	meter   budget.Meter
	lookup  Lookup
	now     time.Time
	requeue time.Duration // soonest positive requeueAfter so far; 0 if none

	file atomic.Pointer[string] // top-level file being executed
	// emptyLists holds the files in which a list lookup returned no items.
	emptyLists map[string]bool
	// random holds, per file, the functions called whose result differs
	// from one call to the next.
	random map[string][]string
}

func newRenderState(in Input, b Budget) *renderState {
	st := &renderState{lookup: in.Lookup, now: in.Now}
	st.meter.Init(b.limits())
	if st.now.IsZero() {
		st.now = time.Now()
	}
	return st
}

func (st *renderState) setFile(f string) { st.file.Store(&f) }

func (st *renderState) currentFile() string {
	if f := st.file.Load(); f != nil {
		return *f
	}
	return ""
}

func (st *renderState) calledNondeterministic(name string) {
	f := st.currentFile()
	if st.random == nil {
		st.random = map[string][]string{}
	}
	if !slices.Contains(st.random[f], name) {
		st.random[f] = append(st.random[f], name)
	}
}

// report adds to res what the render recorded besides its output.
func (st *renderState) report(res *Result) {
	res.RequeueAfter = st.requeue
	res.Nondeterministic = st.random
	for f := range st.emptyLists {
		res.EmptyLists = append(res.EmptyLists, f)
	}
	slices.Sort(res.EmptyLists)
}

// statefulFuncs are the functions with per-render state, bound to h, except
// include and tpl, which also need the template they run in (bindTemplate).
func statefulFuncs(h *holder) template.FuncMap {
	return template.FuncMap{
		"lookup": func(apiVersion, kind, namespace, name string) (map[string]any, error) {
			return h.st.lookupFunc(apiVersion, kind, namespace, name)
		},
		"lookupSelect": func(apiVersion, kind, namespace, selector string) (map[string]any, error) {
			return h.st.lookupSelectFunc(apiVersion, kind, namespace, selector)
		},
		"requeueAfter": func(d any) (string, error) {
			if err := h.st.meter.Check(); err != nil {
				return "", err
			}
			return h.st.requeueAfter(d)
		},
		"durationUntil": func(t any) (time.Duration, error) {
			if err := h.st.meter.Check(); err != nil {
				return 0, err
			}
			return h.st.durationUntil(t)
		},
		// One clock per render: sprig's now would differ from durationUntil's
		// and make outputs depend on when the render ran, not on Input.Now.
		"now": func() (time.Time, error) {
			h.st.calledNondeterministic("now")
			return h.st.now, h.st.meter.Check()
		},
	}
}

// requeueAfter records that the object should be rendered again after d,
// for results that depend on time (certificates, schedules). It prints
// nothing. nil and "" are ignored so that an optional spec field can be
// passed directly; zero and negative durations are ignored too.
func (st *renderState) requeueAfter(d any) (string, error) {
	dur, err := toDuration(d)
	if err != nil {
		return "", err
	}
	if dur > 0 && (st.requeue == 0 || dur < st.requeue) {
		st.requeue = dur
	}
	return "", nil
}

// toDuration accepts a time.Duration, a duration string ("30s", "1h") or a
// number of seconds: the forms a duration takes in a template or in a spec.
func toDuration(d any) (time.Duration, error) {
	switch x := d.(type) {
	case nil:
		return 0, nil
	case time.Duration:
		return x, nil
	case string:
		if x == "" {
			return 0, nil
		}
		dur, err := time.ParseDuration(x)
		if err != nil {
			return 0, funcErrorf("requeueAfter: invalid duration %q: want e.g. \"30s\", \"5m\" or \"1h\"", x)
		}
		return dur, nil
	}
	const maxSeconds = math.MaxInt64 / int64(time.Second)
	v := reflect.ValueOf(d)
	switch {
	case v.CanInt():
		if n := v.Int(); n > maxSeconds || n < -maxSeconds {
			return 0, funcErrorf("requeueAfter: %d seconds is out of range", n)
		}
		return time.Duration(v.Int()) * time.Second, nil
	case v.CanUint():
		if n := v.Uint(); n > uint64(maxSeconds) {
			return 0, funcErrorf("requeueAfter: %d seconds is out of range", n)
		}
		return time.Duration(v.Uint()) * time.Second, nil
	case v.CanFloat():
		f := v.Float()
		if math.IsNaN(f) || math.Abs(f) > float64(maxSeconds) {
			return 0, funcErrorf("requeueAfter: %v seconds is out of range", f)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	return 0, funcErrorf("requeueAfter: want a duration, a duration string or a number of seconds, got %T", d)
}

// durationUntil returns the time from the render's clock until t, negative
// once t has passed, so templates can compute expiries without reading the
// wall clock themselves.
func (st *renderState) durationUntil(t any) (time.Duration, error) {
	st.calledNondeterministic("durationUntil")
	switch x := t.(type) {
	case time.Time:
		return x.Sub(st.now), nil
	case *time.Time:
		if x != nil {
			return x.Sub(st.now), nil
		}
	case string:
		if x == "" {
			break
		}
		when, err := time.Parse(time.RFC3339, x)
		if err != nil {
			return 0, funcErrorf("durationUntil: %q is not an RFC 3339 time (e.g. 2025-01-02T15:04:05Z)", x)
		}
		return when.Sub(st.now), nil
	}
	if t == nil || reflect.ValueOf(t).IsZero() {
		return 0, funcErrorf("durationUntil: no time given")
	}
	return 0, funcErrorf("durationUntil: want a time or an RFC 3339 string, got %T", t)
}

// lookupFunc is Helm's lookup: with a name, the object or an empty map when
// it does not exist (so `{{ if lookup ... }}` tests existence); without a
// name, a List object of all of them.
func (st *renderState) lookupFunc(apiVersion, kind, namespace, name string) (map[string]any, error) {
	if err := st.meter.Check(); err != nil {
		return nil, err
	}
	if name == "" {
		return st.list("lookup", apiVersion, kind, namespace, "")
	}
	if st.lookup == nil {
		return map[string]any{}, nil
	}
	obj, err := st.lookup.Get(apiVersion, kind, namespace, name)
	if err != nil {
		return nil, &funcError{msg: fmt.Sprintf("lookup %s %s %s: %v", apiVersion, kind, objectPath(namespace, name), err), cause: &LookupError{Err: err}}
	}
	if obj == nil {
		return map[string]any{}, nil
	}
	return st.copyObject("lookup", obj, func() string {
		return fmt.Sprintf("lookup %s %s %s", apiVersion, kind, objectPath(namespace, name))
	})
}

// lookupSelectFunc is lookup of a list filtered by a label selector, which
// Helm's lookup cannot express.
func (st *renderState) lookupSelectFunc(apiVersion, kind, namespace, selector string) (map[string]any, error) {
	if err := st.meter.Check(); err != nil {
		return nil, err
	}
	return st.list("lookupSelect", apiVersion, kind, namespace, selector)
}

// list returns a List object, the shape Helm's lookup returns for lists, so
// templates written for Helm range over .items unchanged.
func (st *renderState) list(fn, apiVersion, kind, namespace, selector string) (map[string]any, error) {
	// The List object around the items.
	if err := st.meter.Charge(3*budget.EntryCost, func() string { return fn }); err != nil {
		return nil, err
	}
	items := []any{}
	if st.lookup != nil {
		objs, err := st.lookup.List(apiVersion, kind, namespace, selector)
		if err != nil {
			return nil, &funcError{msg: fmt.Sprintf("%s %s %s%s: %v", fn, apiVersion, kind, listScope(namespace, selector), err), cause: &LookupError{Err: err}}
		}
		if err := st.meter.Charge(budget.ElemCost*int64(len(objs)), func() string { return fn + " of " + strconv.Itoa(len(objs)) + " objects" }); err != nil {
			return nil, err
		}
		items = make([]any, 0, len(objs))
		where := func() string { return fmt.Sprintf("%s %s %s%s", fn, apiVersion, kind, listScope(namespace, selector)) }
		for _, obj := range objs {
			c, err := st.copyObject(fn, obj, where)
			if err != nil {
				return nil, err
			}
			items = append(items, c)
		}
		if len(items) == 0 {
			if st.emptyLists == nil {
				st.emptyLists = map[string]bool{}
			}
			st.emptyLists[st.currentFile()] = true
		}
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, nil
}

// copyObject copies a cached object, charged before the copy is made: a
// template that looks up a large object in a loop copies it every time.
// Objects come from the caller's informer cache, which templates must not
// be able to mutate with set or merge. where names the lookup when the
// object cannot be copied.
func (st *renderState) copyObject(fn string, obj map[string]any, where func() string) (map[string]any, error) {
	if err := st.meter.Check(); err != nil {
		return nil, err
	}
	size, _ := budget.Size(obj, st.meter.Remaining())
	return budget.Bounded(&st.meter, size, func() string { return fmt.Sprintf("%s: a copy of %d bytes or more", fn, size) },
		func() (map[string]any, error) {
			c, err := copyJSONMap(obj)
			if err != nil {
				return nil, funcErrorf("%s: %v", where(), err)
			}
			return c, nil
		}, nil)
}
