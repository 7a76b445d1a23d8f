package reconcile

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

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
	// Shard is this replica's shard (run --sharding), written on every
	// child; "": not sharded.
	Shard string
	// Budget is the operator's render budget; kind.yaml may override it.
	Budget render.Budget
	// Cluster is what the kind's templates see of the cluster, when they
	// read it (catalog.Kind.ReadsCluster: a chart's .Capabilities).
	Cluster catalog.Cluster
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
	// Revision is the number of the kind's revision (engine/revision) that
	// each object's status.observedRevision records; 0: none is recorded.
	Revision int64
	// revisionKept is whether the API server keeps observedRevision
	// (revision.go), learnt from the first write that sent it.
	revisionKept atomic.Int32
	// Writes is told of every write to a parent, so that the next
	// reconcile reads the parent at least as new (engine/controller's
	// ownWrites); nil: told nothing.
	Writes ParentWrites
}

// ParentWrites is told what each write of the reconciler to a parent
// returned, or that its outcome is unknown: whoever gives the reconciler
// its objects must give the next reconcile of that parent one at least as
// new as the write (the watch's events come later than the responses).
// The reconciler keeps nothing of its own between reconciles: it decides
// from the object it is given and from the watched children.
type ParentWrites interface {
	Wrote(written metav1.Object)
	Unknown(obj metav1.Object)
}

// policy is what every plan of r is adopted under.
func (r *Reconciler) policy() ownership.Policy {
	return ownership.Policy{Manager: r.Manager, Bounds: r.Bounds, Shard: r.Shard}
}

// Result tells the controller when to reconcile the object again.
type Result struct {
	// RequeueAfter is the soonest time a template or the deletion guard
	// asked for; 0: only on change.
	RequeueAfter time.Duration
}

// Reconcile runs the pipeline once for obj, a copy the caller owns, at
// least as new as the reconciler's own last write of it (ParentWrites). It
// reads as the steps, each taking what the one before produced: render
// and plan (plan.go) -> claim (claim.go) -> apply in order (apply_step.go)
// -> prune guard (prune.go) -> readiness and status (status_step.go).
// A suspended object (suspend.go) runs none of them, and an object being
// deleted is finalized instead (parent.go).
// Every reconcile runs them all: what is up to date costs no write
// (apply.Applier skips a child already as rendered, writeStatus a status
// already as desired), and nothing of an earlier reconcile is remembered
// to skip them.
func (r *Reconciler) Reconcile(ctx context.Context, obj *unstructured.Unstructured) (Result, error) {
	r.Stats.add(&r.Stats.Reconciles)
	if obj.GetDeletionTimestamp() != nil {
		return r.finalize(ctx, obj) // deletion wins over a suspension
	}
	if by, what := r.Kind.SuspendedBy(obj); by != "" {
		return r.suspended(ctx, obj, by, what)
	}
	t, err := r.plan(ctx, obj)
	if err != nil {
		return Result{}, r.fail(ctx, obj, err)
	}
	if err := r.claim(ctx, t); err != nil {
		return Result{}, r.stepFailed(ctx, obj, err)
	}
	applied, err := r.applyChildren(ctx, t)
	if err != nil || applied.gone {
		return Result{}, r.stepFailed(ctx, obj, err)
	}
	pruned, err := r.prune(ctx, obj, t.plan, applied.keep, t.now)
	if err != nil {
		return Result{}, r.fail(ctx, obj, err)
	}
	t.meta.pruneHeld = pruned.meta
	if err := r.writeParentMeta(ctx, obj, t.meta); err != nil {
		return Result{}, r.parentChanged(ctx, obj, err)
	}
	return r.report(ctx, t, applied, pruned)
}

// trip is one reconcile of one object, as its steps fill it in.
type trip struct {
	obj    *unstructured.Unstructured
	now    time.Time
	lookup render.Lookup
	in     render.Input
	plan   *Plan
	// From the claim: the children as they will be applied, the ones left
	// as they are (they render differently each time) and why, and the
	// parent's metadata to keep.
	desired     []*apply.Desired
	skip        map[int]bool
	unstableMsg string
	meta        parentMeta
	// drifts are the planned children (by index) that drifted from their
	// unchanged render (drift.go).
	drifts map[int]drifted
}

// stepFailed reports the failure of a step: nil when the step ended the
// reconcile with nothing to report (the parent or its namespace is going).
func (r *Reconciler) stepFailed(ctx context.Context, obj *unstructured.Unstructured, err error) error {
	if err == nil {
		return nil
	}
	if pm, ok := errors.AsType[*parentMetaError](err); ok {
		return r.parentChanged(ctx, obj, pm.err)
	}
	return r.fail(ctx, obj, err)
}

// reconciledCondition is Reconciled=True at obj's generation.
func reconciledCondition(obj *unstructured.Unstructured) metav1.Condition {
	return status.Reconciled(status.ReasonReconciled, "", obj.GetGeneration())
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
	if r.Kind.BuiltIn() {
		return nil
	}
	rev := r.revision()
	desired, err := status.DesiredAt(obj, rendered, conds, r.now(), rev)
	if err != nil {
		return err
	}
	if status.Unchanged(obj, desired) {
		return nil
	}
	written, err := status.Write(ctx, r.Client, obj, desired)
	if err != nil && rev != 0 && r.revisionRefused(ctx, err) {
		// A CRD whose schema lacks the field refuses the apply (server-side
		// apply does not prune it): the status is written without it.
		rev = 0
		if desired, err = status.DesiredAt(obj, rendered, conds, r.now(), 0); err != nil {
			return err
		}
		if status.Unchanged(obj, desired) {
			return nil
		}
		written, err = status.Write(ctx, r.Client, obj, desired)
	}
	if err != nil {
		r.writeFailed(obj, err)
		return err
	}
	r.Stats.add(&r.Stats.StatusWrites)
	r.learnRevisionKept(ctx, rev, written)
	r.wrote(written)
	obj.Object["status"] = desired // later steps of this reconcile see it
	return nil
}

// wrote tells Writes what a write of the parent returned.
func (r *Reconciler) wrote(written metav1.Object) {
	if r.Writes != nil {
		r.Writes.Wrote(written)
	}
}

// writeFailed tells Writes that a write of obj failed, when the API server
// may have applied it all the same: a timeout, a connection lost, an error
// of the server. A request it refused (invalid, forbidden, conflict, not
// found, too many requests) changed nothing.
func (r *Reconciler) writeFailed(obj metav1.Object, err error) {
	if r.Writes == nil {
		return
	}
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		if code := s.Status().Code; code >= 400 && code < 500 && code != http.StatusRequestTimeout {
			return
		}
	}
	r.Writes.Unknown(obj)
}

// stable reports whether the object's spec is unchanged since its children
// were last applied: its generation is the one its Reconciled condition
// reports after a reconcile that got through the applies. Built-in kinds
// carry no such record; their spec is taken as unchanged, so the guards
// that depend on it err on the side of holding back.
func stable(kind *catalog.Kind, obj *unstructured.Unstructured) bool {
	if kind.BuiltIn() {
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
