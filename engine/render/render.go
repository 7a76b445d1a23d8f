package render

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/render/internal/budget"
)

// Input is what one render reads. The render deep-copies Object, Children
// and what Lookup returns, so callers may pass informer-cache objects.
// Values must be unstructured content (int64, not int, for whole numbers);
// a Children entry may also be an *unstructured.Unstructured.
type Input struct {
	Object   map[string]any            // the custom resource, as the API returned it (unstructured content)
	Children map[string]map[string]any // status only: kind (any key) -> name -> live child object; .Children keys them by Kind.group and Kind
	Ready    bool                      // status only: .Ready, every child Current (engine/reconcile)
	Lookup   Lookup                    // nil: lookups return empty results (offline rendering, like `helm template`)
	Now      time.Time                 // zero: time.Now(); used by durationUntil (lets tests be deterministic)
	Budget   Budget                    // zero fields: the defaults
	// Dots, when set, are the dot of each child template, by file name,
	// in place of the one built from Object, and only the files that have
	// one are rendered: a Helm chart's templates each see their own scope
	// (.Values of their chart, .Template), and a disabled subchart's
	// render nothing (engine/chart builds them). The render may change
	// them (sprig's set): build them anew for every render.
	Dots map[string]map[string]any
	// Spent is what work done for this render before it started took of
	// its Budget (a chart's values: engine/chart): the render has the rest.
	Spent Spent
}

// Spent is what work done for a render, outside it, took of the render's
// Budget: a chart's values, their copies and their schema's validation
// (engine/chart), which are the render's as much as its templates are.
// The render's deadline comes Time sooner, and Bytes are charged to its
// output before it starts, so that the object's whole render, not only
// its templates, is held to the budget.
type Spent struct {
	Time  time.Duration
	Bytes int64
}

// Manifest is one child object rendered from a template.
type Manifest struct {
	Template string                     // file it came from, e.g. "deployment.yaml"
	Index    int                        // 0-based document index within that file's output (counting only non-empty documents)
	Object   *unstructured.Unstructured // k8s.io/apimachinery/pkg/apis/meta/v1/unstructured
}

// Result is the outcome of one render.
type Result struct {
	Manifests    []Manifest     // children, in file-name order then document order
	Status       map[string]any // status.yaml output (nil when there is no status.yaml or it rendered empty)
	RequeueAfter time.Duration  // the soonest positive duration passed to requeueAfter during this render; 0 if none
	// EmptyLists are the files in which a list lookup (lookup with no name,
	// lookupSelect) returned no items: children rendered per item vanish
	// when a cache is empty, which pruning must not take at its word.
	EmptyLists []string
	// Nondeterministic maps a file to the functions it called whose result
	// differs from one call to the next (randAlphaNum, uuidv4, genCA, now).
	Nondeterministic map[string][]string
}

// noValue is what text/template prints for a missing key even with
// missingkey=zero; Helm removes it so optional fields read as empty.
const noValue = "<no value>"

// Children renders every child template. If any template fails, it returns an error and no manifests.
//
// It returns within in.Budget.Timeout plus a grace period whatever the
// templates do, and soon after ctx is canceled.
func (s *Set) Children(ctx context.Context, in Input) (*Result, error) {
	return s.run(ctx, in, false, func(r *render) (*Result, error) {
		res := &Result{}
		for _, name := range s.children {
			if in.Dots != nil {
				dot, ok := in.Dots[name]
				if !ok {
					continue
				}
				r.data = dot
			}
			out, err := r.execute(name)
			if err != nil {
				return nil, err
			}
			if res.Manifests, err = appendManifests(res.Manifests, name, out); err != nil {
				return nil, err
			}
			if limit := r.maxManifests; len(res.Manifests) > limit {
				be := &BudgetError{Budget: BudgetManifests, Limit: int64(limit)}
				return nil, &Error{Template: name, Message: be.Error(), err: be}
			}
		}
		return res, nil
	})
}

// Status renders status.yaml (Result.Status; nil Status and no error when there is none).
// in.Children are the live children as they are after apply, so that the
// status can report what the cluster made of them (readyReplicas...).
func (s *Set) Status(ctx context.Context, in Input) (*Result, error) {
	if !s.status {
		return &Result{}, nil
	}
	return s.run(ctx, in, true, func(r *render) (*Result, error) {
		out, err := r.execute(statusFile)
		if err != nil {
			return nil, err
		}
		status, err := decodeStatus(out)
		if err != nil {
			return nil, err
		}
		return &Result{Status: status}, nil
	})
}

// Runaway is how many renders of s were abandoned past their deadline and
// are still running, all objects together.
func (s *Set) Runaway() int { return s.runaway.count() }

// render is one call of Children or Status, run on a goroutine of its own
// (runWith).
type render struct {
	set          *Set
	inst         *instance
	state        *renderState
	maxManifests int
	data         map[string]any
	w            budget.Writer // reused across the files of the render

	// progress is running, finished or abandoned: the render's goroutine
	// and its caller race to move it on. done has its outcome once it
	// finished.
	progress atomic.Int32
	done     chan outcome
}

type outcome struct {
	res *Result
	err error
}

// run executes body on an instance of s, with the dot of every template
// built from in (templateData), on a goroutine of its own; see runWith.
func (s *Set) run(ctx context.Context, in Input, withChildren bool, body func(*render) (*Result, error)) (*Result, error) {
	key := objectKey(in.Object)
	if err := s.degraded(key); err != nil {
		return nil, err
	}
	var data map[string]any
	if in.Dots == nil || withChildren {
		var err error
		if data, err = templateData(in, withChildren); err != nil {
			return nil, err
		}
	}
	return s.runWith(ctx, key, in, data, body)
}

// degraded refuses a render of the object key while maxRunaway renders of
// it still run abandoned, before anything is copied for it.
func (s *Set) degraded(key string) error {
	if n := s.runaway.of(key); n >= maxRunaway {
		be := &BudgetError{Budget: BudgetDegraded, Limit: int64(n)}
		return &Error{Message: be.Error(), err: be}
	}
	return nil
}

// Where a render run by runWith is (render.progress).
const (
	running = iota
	finished
	abandoned
)

// runWith executes body on an instance of s, over data, on a goroutine of
// its own, and waits at most the budget's timeout plus a grace period.
// The deadline and ctx stop the render cooperatively (every loop,
// include, tpl and function call checks them); a render that does not
// notice in time, because one function call runs long, is abandoned: the
// caller gets a time budget error at once, and the goroutine stops at its
// next check, which every call reaches within a bounded amount of work.
// key names the object, whose abandoned renders are counted (runaway.go).
func (s *Set) runWith(ctx context.Context, key string, in Input, data map[string]any, body func(*render) (*Result, error)) (*Result, error) {
	b := in.Budget.WithDefaults()
	left := b.Timeout - in.Spent.Time
	if left <= 0 {
		be := &BudgetError{Budget: BudgetTime, Limit: int64(b.Timeout), Detail: fmt.Sprintf("%s spent before the templates ran", in.Spent.Time.Round(time.Millisecond))}
		return nil, &Error{Message: be.Error(), err: be}
	}
	st := newRenderState(in, b)
	if err := st.meter.Charge(in.Spent.Bytes, func() string { return fmt.Sprintf("%d bytes spent before the templates ran", in.Spent.Bytes) }); err != nil {
		return nil, &Error{Message: err.Error(), err: err}
	}
	inst, err := s.checkout(st)
	if err != nil {
		return nil, err
	}
	r := &render{set: s, inst: inst, state: st, maxManifests: b.MaxManifests, data: data, done: make(chan outcome, 1)}
	deadline := time.AfterFunc(left, st.meter.Expire)
	stopOnCancel := context.AfterFunc(ctx, st.meter.Cancel)
	goRender(func() {
		res, err := body(r)
		if err == nil {
			st.report(res)
		}
		deadline.Stop()
		stopOnCancel()
		s.checkin(inst)
		if r.progress.CompareAndSwap(running, finished) {
			r.done <- outcome{res, err}
			return
		}
		s.runaway.add(key, -1)
	})
	return s.await(ctx, key, b, left, r)
}

// await returns the outcome of r, or abandons it past its deadline (left
// from now) and grace period, or past a grace period once ctx is done.
func (s *Set) await(ctx context.Context, key string, b Budget, left time.Duration, r *render) (*Result, error) {
	hard := time.NewTimer(left + b.grace())
	defer hard.Stop()
	select {
	case o := <-r.done:
		return o.res, o.err
	case <-hard.C:
	case <-ctx.Done():
		g := time.NewTimer(b.grace())
		defer g.Stop()
		select {
		case o := <-r.done:
			return o.res, o.err
		case <-g.C:
		}
	}
	// Counted before the render can end and uncount itself.
	n := s.runaway.add(key, 1)
	if !r.progress.CompareAndSwap(running, abandoned) {
		s.runaway.add(key, -1)
		o := <-r.done
		return o.res, o.err
	}
	st := r.state
	// The deadline or ctx has set it already; an abandoned render must
	// stop at its next check whatever happened.
	st.meter.Expire()
	be := &BudgetError{Budget: BudgetTime, Limit: int64(b.Timeout),
		Detail: fmt.Sprintf("abandoned %s after its deadline, still running (%d of this object now)", b.grace(), n)}
	if ctx.Err() != nil {
		be = &BudgetError{Budget: BudgetCanceled, Detail: "abandoned, still running"}
	}
	return nil, &Error{Template: st.currentFile(), Message: be.Error(), err: be}
}

// execute runs one file of the set and returns its output, which stays
// valid until the next call.
func (r *render) execute(file string) (out []byte, err error) {
	defer func() {
		// text/template re-panics runtime errors of its own; a template
		// folder written by a user must not be able to crash the operator.
		if p := recover(); p != nil {
			out, err = nil, &Error{Template: file, Message: fmt.Sprintf("panic while rendering: %v", p)}
		}
	}()
	r.state.setFile(file)
	r.w.Reset(&r.state.meter, file)
	if err := r.inst.tmpl.ExecuteTemplate(&r.w, file, r.data); err != nil {
		return nil, r.set.execError(file, err)
	}
	out = r.w.Bytes()
	if bytes.Contains(out, []byte(noValue)) {
		out = bytes.ReplaceAll(out, []byte(noValue), nil)
	}
	return out, nil
}

// templateData builds the dot of every template. The object is deep-copied
// once per render: sprig's set, unset and merge mutate maps in place, and
// the caller's object (often straight from an informer cache) must not
// change.
func templateData(in Input, withChildren bool) (map[string]any, error) {
	obj, err := copyJSONMap(in.Object)
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("input object: %v", err), err: err}
	}
	meta := mapOrEmpty(obj["metadata"])
	name, _ := meta["name"].(string)
	namespace, _ := meta["namespace"].(string)
	data := map[string]any{
		"Object":      obj,
		"Name":        name,
		"Namespace":   namespace,
		"Spec":        mapOrEmpty(obj["spec"]),
		"Status":      mapOrEmpty(obj["status"]),
		"Labels":      mapOrEmpty(meta["labels"]),
		"Annotations": mapOrEmpty(meta["annotations"]),
	}
	if withChildren {
		children, err := childrenData(in.Children)
		if err != nil {
			return nil, err
		}
		data["Children"] = children
		data["Ready"] = in.Ready
	}
	return data, nil
}

// childContent accepts a live child as unstructured content or as the
// *unstructured.Unstructured that apply steps usually hold.
func childContent(child any) (map[string]any, error) {
	switch c := child.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return c, nil
	case interface{ UnstructuredContent() map[string]any }:
		if v := reflect.ValueOf(c); v.Kind() == reflect.Pointer && v.IsNil() {
			return nil, nil
		}
		return c.UnstructuredContent(), nil
	}
	return nil, fmt.Errorf("want unstructured content (map[string]any), got %T", child)
}

// mapOrEmpty returns v as a mapping, or a new empty one, so that templates
// can write .Spec.size on an object without spec and read it as empty.
func mapOrEmpty(v any) map[string]any {
	if m, ok := v.(map[string]any); ok && m != nil {
		return m
	}
	return map[string]any{}
}
