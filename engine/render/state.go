package render

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"text/template"
	"time"
)

// maxNesting bounds include (per template name, as Helm does) and tpl
// recursion, so a template that includes itself fails instead of exhausting
// the stack of the operator.
const maxNesting = 1000

// tplName names the template a tpl string is parsed as. It is not a file
// name, so errors inside a tpl string are reported at the tpl call site.
const tplName = "tpl"

// renderState is what the functions of one render share. It lives in the
// closures bound to that render's clone of the set, so concurrent renders of
// one Set never see each other's state; text/template executes a template on
// the calling goroutine only, so no lock is needed.
type renderState struct {
	lookup   Lookup
	now      time.Time
	requeue  time.Duration  // soonest positive requeueAfter so far; 0 if none
	includes map[string]int // nesting depth of include, per template name
	tpls     int            // nesting depth of tpl
}

func newRenderState(in Input) *renderState {
	st := &renderState{lookup: in.Lookup, now: in.Now}
	if st.now.IsZero() {
		st.now = time.Now()
	}
	return st
}

// bind installs the stateful functions on t, a clone owned by this render.
func (st *renderState) bind(t *template.Template) {
	t.Funcs(template.FuncMap{
		"include":       st.includeFunc(t),
		"tpl":           st.tplFunc(t),
		"lookup":        st.lookupFunc,
		"lookupSelect":  st.lookupSelectFunc,
		"requeueAfter":  st.requeueAfter,
		"durationUntil": st.durationUntil,
		// One clock per render: sprig's now would differ from durationUntil's
		// and make outputs depend on when the render ran, not on Input.Now.
		"now": func() time.Time { return st.now },
	})
}

// includeFunc executes a named template into a string, so that its output
// can be piped (`include "labels" . | nindent 4`), which {{ template }} cannot.
func (st *renderState) includeFunc(t *template.Template) func(string, any) (string, error) {
	return func(name string, data any) (string, error) {
		if t.Lookup(name) == nil {
			return "", funcErrorf("include: no template named %q", name)
		}
		if st.includes[name] >= maxNesting {
			return "", &funcError{sticky: true, msg: fmt.Sprintf("include %q: more than %d nested calls (recursive include?)", name, maxNesting)}
		}
		if st.includes == nil {
			st.includes = map[string]int{}
		}
		st.includes[name]++
		defer func() { st.includes[name]-- }()

		var buf strings.Builder
		if err := t.ExecuteTemplate(&buf, name, data); err != nil {
			return "", passUp(err)
		}
		return buf.String(), nil
	}
}

// tplFunc renders a string as a template, e.g. a template held in the spec.
// The string is parsed into a clone of the render's set, so it can include
// the folder's helpers and its own {{ define }}s stay local to the call.
func (st *renderState) tplFunc(parent *template.Template) func(string, any) (string, error) {
	return func(text string, data any) (string, error) {
		if st.tpls >= maxNesting {
			return "", &funcError{sticky: true, msg: fmt.Sprintf("tpl: more than %d nested calls (recursive tpl?)", maxNesting)}
		}
		t, err := parent.Clone()
		if err != nil {
			return "", funcErrorf("tpl: %v", err)
		}
		// Rebind include and tpl so they see the string's own defines; the
		// other stateful functions were copied from parent by Clone.
		t.Funcs(template.FuncMap{"include": st.includeFunc(t), "tpl": st.tplFunc(t)})
		if _, err := t.New(tplName).Parse(text); err != nil {
			_, line, rest, ok := splitLocation(err.Error())
			if ok && line > 0 {
				return "", funcErrorf("tpl: line %d of the template string: %s", line, rest)
			}
			return "", funcErrorf("tpl: %v", err)
		}

		st.tpls++
		defer func() { st.tpls-- }()
		var buf strings.Builder
		if err := t.ExecuteTemplate(&buf, tplName, data); err != nil {
			return "", passUp(err)
		}
		return strings.ReplaceAll(buf.String(), noValue, ""), nil
	}
}

// passUp returns a sticky funcError found in err instead of err itself; see
// funcError.sticky.
func passUp(err error) error {
	if fe, ok := errors.AsType[*funcError](err); ok && fe.sticky {
		return fe
	}
	return err
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
