package render

import (
	"math"
	"reflect"
	"slices"
	"sync/atomic"
	"text/template"
	"time"
)

// renderState is what the functions of one render share. Functions reach
// it through the holder of the instance the render runs on; text/template
// executes a template on the calling goroutine only, so no lock is needed,
// except for file, which the caller reads when it abandons a render.
type renderState struct {
	meter   meter
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
	st := &renderState{lookup: in.Lookup, now: in.Now, meter: meter{budget: b}}
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

// holder points the functions bound to one instance at the render that
// currently runs on it.
type holder struct {
	st *renderState
	// root is the instance's template set, and runner a clone of it where
	// tpl strings without defines of their own are parsed (tpl.go), with
	// names, every function's, for the parser to check.
	root, runner *template.Template
	names        template.FuncMap
	// zones are the time zones loaded for dateInZone (dates.go).
	zones map[string]*time.Location
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
			if err := h.st.meter.check(); err != nil {
				return "", err
			}
			return h.st.requeueAfter(d)
		},
		"durationUntil": func(t any) (time.Duration, error) {
			if err := h.st.meter.check(); err != nil {
				return 0, err
			}
			return h.st.durationUntil(t)
		},
		// One clock per render: sprig's now would differ from durationUntil's
		// and make outputs depend on when the render ran, not on Input.Now.
		"now": func() (time.Time, error) {
			h.st.calledNondeterministic("now")
			return h.st.now, h.st.meter.check()
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
