package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/status"
)

// Lookups gives a parent's render what it may read. For may wait for
// caches to sync; it returns a Lookup even for kinds that declare no
// lookups, which refuses every read.
type Lookups interface {
	For(ctx context.Context, parent *unstructured.Unstructured) (render.Lookup, error)
}

// Inventory is the cluster's record of the kinds of children each kind of
// parent has applied (engine/inventory).
type Inventory interface {
	ChildKinds(ctx context.Context, parent schema.GroupKind) ([]schema.GroupKind, error)
	Record(ctx context.Context, parent schema.GroupKind, children []schema.GroupKind) error
}

// Reconciler reconciles the objects of one kind.
type Reconciler struct {
	Kind *catalog.Kind
	// Client makes every cluster call of the kind.
	Client    *kube.Client
	Applier   *apply.Applier
	Lookups   Lookups
	Inventory Inventory
	Recorder  record.EventRecorder
	// Manager is the field manager and the value of the managed-by label.
	Manager string
	// Bounds are where no child may go, whatever the kind allows.
	Bounds ownership.Bounds
	// Budget is the operator's render budget; kind.yaml may override it.
	Budget render.Budget
	// PruneConfirmDelay is how long the deletion guard holds a prune back;
	// 0: DefaultPruneConfirmDelay.
	PruneConfirmDelay time.Duration
	// WaitFor asks to reconcile parent again when the object at key
	// changes: a child that exists and is not the parent's.
	WaitFor func(key apply.Key, parent ownership.Parent)
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Stats counts what the reconciler did (required).
	Stats *Stats

	memo memo
}

// policy is what every plan of r is adopted under.
func (r *Reconciler) policy() ownership.Policy {
	return ownership.Policy{Manager: r.Manager, Bounds: r.Bounds}
}

// Result tells the controller when to reconcile the object again.
type Result struct {
	// RequeueAfter is the soonest time a template or the deletion guard
	// asked for; 0: only on change.
	RequeueAfter time.Duration
}

// Reconcile runs the pipeline once for obj, a copy the caller owns.
func (r *Reconciler) Reconcile(ctx context.Context, obj *unstructured.Unstructured) (Result, error) {
	r.Stats.add(&r.Stats.Reconciles)
	if obj.GetDeletionTimestamp() != nil {
		r.memo.drop(obj.GetUID())
		return r.finalize(ctx, obj)
	}
	if r.memoizable() {
		switch r.memo.get(obj.GetUID()).check(obj, r.Applier) {
		case memoSame:
			r.Stats.add(&r.Stats.Unchanged)
			return Result{}, nil
		case memoStatusOnly:
			if ok, err := r.statusOnly(ctx, obj); ok {
				return Result{}, err
			}
		}
	}
	r.memo.drop(obj.GetUID())
	now := r.now()
	lookup, err := r.Lookups.For(ctx, obj)
	if err != nil {
		return Result{}, r.fail(ctx, obj, failed(status.ReasonLookupFailed, err))
	}
	in := render.Input{Lookup: lookup, Now: now, Budget: r.Kind.RenderBudget(r.Budget)}
	rendering := time.Now()
	plan, err := MakePlan(ctx, r.Kind, obj, in, r.Client.Namespaced, r.policy())
	observeRender(r.Kind.GVK.GroupKind(), RenderChildren, rendering)
	if err != nil {
		return Result{}, r.fail(ctx, obj, err)
	}
	desired, err := r.prepare(ctx, obj, plan)
	if err != nil {
		return Result{}, r.fail(ctx, obj, err)
	}
	skip, unstableMsg := r.unstable(ctx, obj, plan, desired, in)

	want := currentMeta(obj)
	want.finalizer = want.finalizer || plan.NeedsFinalizer()
	if err := r.writeParentMeta(ctx, obj, want); err != nil {
		return Result{}, r.parentChanged(ctx, obj, err)
	}

	keep := map[apply.Key]bool{}
	created := map[apply.Key]apply.Child{} // outside the namespace, by this reconcile
	lives := make([]*unstructured.Unstructured, len(desired))
	states := make([]childState, len(desired))
	for i, c := range plan.Children {
		states[i] = childState{template: c.Template, label: label(c.Object), first: isFirst(c.Object)}
	}
	deps := r.Kind.Spec.DependsOn
	gates := map[string]*wait{}
	var waits []wait
	var unserved time.Duration // a child whose CRD is Current but not served yet
	for _, i := range applyOrder(plan.Children, deps) {
		d, st := desired[i], &states[i]
		keep[d.Key] = true
		live := d.Live
		if !st.first && !d.UpToDate {
			// A child that would be written waits until the children its
			// template depends on are Current; one up to date has nothing
			// to wait for.
			w, seen := gates[st.template]
			if !seen {
				w = blocker(st.template, deps[st.template], states)
				gates[st.template] = w
				if w != nil {
					waits = append(waits, *w)
				}
			}
			if w == nil && d.Mapping == nil {
				// Its CRD, a child, is Current, and discovery does not
				// serve the kind yet.
				w = &wait{template: st.template, dep: st.template, on: st.label + ": its CustomResourceDefinition is not served yet"}
				waits = append(waits, *w)
				unserved = crdServeRetry
			}
			st.waiting = w != nil
		}
		if !st.waiting && !skip[i] {
			out, err := r.Applier.Apply(ctx, r.Client, d)
			if err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					// The namespace, and the parent with it, is going away:
					// nothing to repair, nothing to report.
					klog.FromContext(ctx).V(2).Info("Namespace terminating: not applying", "template", plan.Children[i].Template)
					return Result{}, nil
				}
				return Result{}, r.fail(ctx, obj, fmt.Errorf("%s: %w", plan.Children[i].Template, err))
			}
			r.Stats.applied(out.Skipped)
			live = out.Live
			if plan.Children[i].NeedsFinalizer && d.Live == nil {
				created[d.Key] = out.Live
			}
		}
		lives[i] = live
		if live != nil {
			st.live, st.health = true, r.Kind.Health.Check(live)
		}
	}
	if len(waits) > 0 {
		klog.FromContext(ctx).V(2).Info("Children wait for their dependencies", "waits", fmt.Sprint(waits))
	}

	if err := r.verifyParent(ctx, obj, created); err != nil {
		if errors.Is(err, errParentGone) {
			return Result{}, nil
		}
		return Result{}, r.fail(ctx, obj, err)
	}

	pruned, err := r.prune(ctx, obj, plan, keep, now)
	if err != nil {
		return Result{}, r.fail(ctx, obj, err)
	}
	want.pruneHeld = pruned.meta
	if err := r.writeParentMeta(ctx, obj, want); err != nil {
		return Result{}, r.parentChanged(ctx, obj, err)
	}

	st, err := statusStep{kind: r.Kind, obj: obj, states: states, lives: lives, waits: waits, pruneHeld: pruned.held != nil,
		lookup: lookup, now: now, budget: in.Budget}.render(ctx)
	if err != nil {
		return Result{}, r.fail(ctx, obj, failed(status.ReasonStatusFailed, err))
	}
	rendered, sres, readyConds := st.rendered, st.result, st.readyConds
	cond := reconciledCondition(obj)
	if unstableMsg != "" {
		cond = status.Reconciled(status.ReasonNonDeterministic, unstableMsg, obj.GetGeneration())
		if c := status.Find(statusOf(obj), status.ConditionReconciled); c == nil || c.Reason != status.ReasonNonDeterministic {
			r.Recorder.Event(obj, corev1.EventTypeWarning, status.ReasonNonDeterministic, unstableMsg)
		}
	}
	conds := []metav1.Condition{cond}
	if pruned.held != nil {
		conds = append(conds, *pruned.held)
	}
	conds = append(conds, readyConds...)
	if err := r.writeStatus(ctx, obj, rendered, conds); err != nil {
		return Result{}, err // the condition cannot be written either: retry
	}
	if r.memoizable() && plan.RequeueAfter == 0 && sres.RequeueAfter == 0 && len(plan.Nondeterministic) == 0 &&
		len(sres.Nondeterministic) == 0 && unstableMsg == "" && pruned.held == nil && len(created) == 0 && unserved == 0 {
		r.remember(obj, desired, lives, states)
	}
	return Result{RequeueAfter: Soonest(Soonest(Soonest(plan.RequeueAfter, sres.RequeueAfter), pruned.requeue), unserved)}, nil
}

// reconciledCondition is Reconciled=True at obj's generation.
func reconciledCondition(obj *unstructured.Unstructured) metav1.Condition {
	return status.Reconciled(status.ReasonReconciled, "", obj.GetGeneration())
}

// memoizable reports whether renders of this kind read nothing but their
// object (no lookups), a condition for remembering them (see memo).
func (r *Reconciler) memoizable() bool { return len(r.Kind.Spec.Lookups) == 0 }

// remember records what a complete reconcile of obj saw: every planned
// child, in apply order, with whether it waits; the resourceVersions of
// those that exist.
func (r *Reconciler) remember(obj *unstructured.Unstructured, desired []*apply.Desired, lives []*unstructured.Unstructured, states []childState) {
	e := &memoEntry{parentRV: obj.GetResourceVersion(), children: make([]memoChild, len(desired))}
	for i, d := range desired {
		c := memoChild{key: d.Key, state: states[i]}
		if live := lives[i]; live != nil {
			c.exists, c.rv, c.generation, c.hash = true, live.GetResourceVersion(), live.GetGeneration(), live.GetAnnotations()[ownership.AnnotationHash]
		}
		e.children[i] = c
	}
	r.memo.put(obj.GetUID(), e)
}

// statusOnly renders and writes the status of obj when only its children's
// status changed since its last complete reconcile: their health and the
// conditions are judged again from the watched children. It reports false
// when the caches cannot serve it, or when children that waited need not
// wait any more, and the full reconcile must run.
func (r *Reconciler) statusOnly(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	e := r.memo.get(obj.GetUID())
	lives := make([]*unstructured.Unstructured, len(e.children))
	desired := make([]*apply.Desired, len(e.children))
	states := make([]childState, len(e.children))
	for i, c := range e.children {
		desired[i] = &apply.Desired{Key: c.key}
		states[i] = c.state
		if !c.exists {
			continue
		}
		live, ok := r.Applier.Live(c.key)
		if !ok {
			return false, nil
		}
		lives[i] = live
		states[i].live, states[i].health = true, r.Kind.Health.Check(live)
	}
	waits, still := regate(states, r.Kind.Spec.DependsOn)
	if !still {
		return false, nil // a dependency became Current: apply what waited
	}
	now := r.now()
	lookup, err := r.Lookups.For(ctx, obj)
	if err != nil {
		return false, nil
	}
	st, err := statusStep{kind: r.Kind, obj: obj, states: states, lives: lives, waits: waits,
		lookup: lookup, now: now, budget: r.Kind.RenderBudget(r.Budget)}.render(ctx)
	if err != nil || st.result.RequeueAfter > 0 || len(st.result.Nondeterministic) > 0 {
		return false, nil // the full reconcile reports it, or does not remember
	}
	conds := append([]metav1.Condition{reconciledCondition(obj)}, st.readyConds...)
	if err := r.writeStatus(ctx, obj, st.rendered, conds); err != nil {
		r.memo.drop(obj.GetUID())
		return true, err
	}
	r.Stats.add(&r.Stats.StatusOnly)
	r.remember(obj, desired, lives, states)
	return true, nil
}

// parentChanged handles a failed write to the parent's metadata. Its UID
// precondition fails when the object was deleted (or deleted and created
// again) since the cache saw it: there is nothing to report on, and the
// watch brings the news. Anything else is a failure like another.
func (r *Reconciler) parentChanged(ctx context.Context, obj *unstructured.Unstructured, err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		klog.FromContext(ctx).V(2).Info("Parent changed while reconciling; retrying", "err", err.Error())
		return err
	}
	return r.fail(ctx, obj, err)
}

// writeStatus writes the status: rendered (nil on a failure: the current
// fields are kept) with the engine's conditions. The status of built-in
// kinds belongs to Kubernetes: for those the Events are the report.
func (r *Reconciler) writeStatus(ctx context.Context, obj *unstructured.Unstructured, rendered map[string]any, conds []metav1.Condition) error {
	if catalog.BuiltInGroup(r.Kind.GVK.Group) {
		return nil
	}
	desired, err := status.Desired(obj, rendered, conds, r.now())
	if err != nil {
		return err
	}
	wrote, err := status.Write(ctx, r.Client, obj, desired)
	if err != nil {
		return err
	}
	if wrote {
		r.Stats.add(&r.Stats.StatusWrites)
	}
	return nil
}

// stable reports whether the object's spec is unchanged since its children
// were last applied: its generation is the one its Reconciled condition
// reports after a reconcile that got through the applies. Built-in kinds
// carry no such record; their spec is taken as unchanged, so the guards
// that depend on it err on the side of holding back.
func (r *Reconciler) stable(obj *unstructured.Unstructured) bool {
	if catalog.BuiltInGroup(r.Kind.GVK.Group) {
		return true
	}
	c := status.Find(statusOf(obj), status.ConditionReconciled)
	if c == nil || c.ObservedGeneration != obj.GetGeneration() {
		return false
	}
	switch c.Reason {
	case status.ReasonReconciled, status.ReasonNonDeterministic, status.ReasonStatusFailed:
		return true
	}
	return false
}

func statusOf(obj *unstructured.Unstructured) map[string]any {
	s, _, _ := unstructured.NestedMap(obj.Object, "status")
	return s
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Soonest is the sooner of two requeue delays, 0 meaning none.
func Soonest(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
