package reconcile

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/status"
)

// statusStep is the last step of a reconcile, as a function of what the
// steps before produced: the children's states, which templates wait, and
// whether a prune is held. The reconcile and `operator render`'s preview
// both go through it, so that status.yaml sees the same .Children and
// .Ready everywhere.
type statusStep struct {
	kind      *catalog.Kind
	obj       *unstructured.Unstructured
	states    []childState
	lives     []*unstructured.Unstructured
	waits     []wait
	pruneHeld bool
	lookup    render.Lookup
	now       time.Time
	budget    render.Budget
}

// statusRendered is what the status step gives: status.yaml's output (never
// nil), the render's result, and the readiness conditions.
type statusRendered struct {
	rendered   map[string]any
	result     *render.Result
	readyConds []metav1.Condition
}

// render judges readiness and renders status.yaml over the children.
func (s statusStep) render(ctx context.Context) (*statusRendered, error) {
	readyConds, ready := readiness(s.states, s.waits, s.pruneHeld, s.obj.GetGeneration())
	rendering := time.Now()
	res, err := s.kind.Status(ctx, render.Input{Object: s.obj.Object, Children: statusChildren(s.states, s.lives), Ready: ready,
		Lookup: s.lookup, Now: s.now, Budget: s.budget})
	observeRender(s.kind.GVK.GroupKind(), RenderStatus, rendering)
	if err != nil {
		return nil, err
	}
	rendered := res.Status
	if rendered == nil {
		rendered = map[string]any{}
	}
	return &statusRendered{rendered: rendered, result: res, readyConds: readyConds}, nil
}

// Preview is what a reconcile of obj would write to its status, given its
// children as they are (live: `operator render --children`, or the planned
// children themselves): status.yaml's output and the engine's conditions.
// lookup may be nil (an offline render reads nothing).
func Preview(ctx context.Context, kind *catalog.Kind, obj *unstructured.Unstructured, live []*unstructured.Unstructured,
	lookup render.Lookup, now time.Time, budget render.Budget) (rendered map[string]any, conds []metav1.Condition, requeue time.Duration, err error) {
	states := make([]childState, len(live))
	for i, o := range live {
		states[i] = childState{label: label(o), live: true, health: kind.Health.Check(o)}
	}
	st, err := statusStep{kind: kind, obj: obj, states: states, lives: live, lookup: lookup, now: now, budget: budget}.render(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	conds = append(conds, reconciledCondition(obj))
	return st.rendered, append(conds, st.readyConds...), st.result.RequeueAfter, nil
}

// report is the last step: the conditions, status.yaml over the children,
// and one write of the status when it changed.
func (r *Reconciler) report(ctx context.Context, t *trip, applied *appliedChildren, pruned pruneOutcome) (Result, error) {
	obj := t.obj
	st, err := applied.gate.status(obj, pruned.held != nil, t.lookup, t.now, t.in.Budget).render(ctx)
	if err != nil {
		return Result{}, r.fail(ctx, obj, failed(status.ReasonStatusFailed, err))
	}
	cond := reconciledCondition(obj)
	if t.unstableMsg != "" {
		cond = status.Reconciled(status.ReasonNonDeterministic, t.unstableMsg, obj.GetGeneration())
		if c := status.Find(statusOf(obj), status.ConditionReconciled); c == nil || c.Reason != status.ReasonNonDeterministic {
			r.Recorder.Event(obj, corev1.EventTypeWarning, status.ReasonNonDeterministic, t.unstableMsg)
		}
	}
	conds := []metav1.Condition{cond}
	if pruned.held != nil {
		conds = append(conds, *pruned.held)
	}
	conds = append(conds, st.readyConds...)
	if c := r.resumed(obj); c != nil {
		conds = append(conds, *c)
	}
	if c := r.driftCondition(obj, t.drifts, len(t.plan.Children)); c != nil {
		conds = append(conds, *c)
	}
	r.Kind.Record(st.rendered, obj.Object, current(t.plan.objects(), applied.gate.states))
	if err := r.writeStatus(ctx, obj, st.rendered, conds); err != nil {
		return Result{}, err // the condition cannot be written either: retry
	}
	plan, sres := t.plan, st.result
	var again time.Duration
	if applied.gate.unserved {
		again = crdServeRetry
	}
	if applied.recreated {
		again = Soonest(again, recreateRetry) // should its deletion's event have come already
	}
	return Result{RequeueAfter: Soonest(Soonest(Soonest(plan.RequeueAfter, sres.RequeueAfter), pruned.requeue), again)}, nil
}
