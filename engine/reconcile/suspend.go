package reconcile

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/status"
)

// suspended is the reconcile of a suspended object (catalog.Kind.SuspendedBy:
// the annotation, or the kind's suspend field): nothing is rendered,
// applied, pruned or run, and nothing of the object is written but its
// Suspended condition, once, when it changes. Its observedGeneration stays
// as it was: the spec changes made while it is suspended are not
// reconciled, and a spec change costs no write. Deletion is not held: the
// reconcile of an object being deleted finalizes it first (Reconcile).
func (r *Reconciler) suspended(ctx context.Context, obj *unstructured.Unstructured, by, what string) (Result, error) {
	r.Stats.add(&r.Stats.SuspendedReconciles)
	reason := status.ReasonSuspendedByField
	if by == catalog.SuspendedByAnnotation {
		reason = status.ReasonSuspendedByAnnotation
	}
	msg := "suspended by " + what + ": no child is applied or pruned, and nothing is written, until it is removed; deleting the object still deletes its children"
	cond := status.New(status.ConditionSuspended, metav1.ConditionTrue, reason, reason, msg, obj.GetGeneration())
	cur := status.Find(statusOf(obj), status.ConditionSuspended)
	if cur != nil && cur.Status == metav1.ConditionTrue && cur.Reason == cond.Reason && cur.Message == cond.Message {
		cond = *cur // as written when the suspension began, its generation and time with it
	} else {
		klog.FromContext(ctx).Info("Object suspended: not reconciled until resumed", "by", what)
		r.Recorder.Event(obj, corev1.EventTypeNormal, "Suspended", msg)
	}
	if r.Kind.BuiltIn() {
		return Result{}, nil // its status is Kubernetes': the Event is the report
	}
	desired, err := status.Held(obj, []metav1.Condition{cond}, r.now())
	if err != nil {
		return Result{}, err
	}
	if status.Unchanged(obj, desired) {
		return Result{}, nil
	}
	written, err := status.Write(ctx, r.Client, obj, desired)
	if err != nil {
		r.writeFailed(obj, err)
		return Result{}, err
	}
	r.Stats.add(&r.Stats.StatusWrites)
	r.wrote(written)
	return Result{}, nil
}

// resumed is the Suspended condition of an object that is not suspended
// (any more): False since it was resumed, when the object was ever
// suspended; nil when it never was (its status has no such condition, and
// gets none). It tells of the resumption, once, in an Event.
func (r *Reconciler) resumed(obj *unstructured.Unstructured) *metav1.Condition {
	cur := status.Find(statusOf(obj), status.ConditionSuspended)
	if by, _ := r.Kind.SuspendedBy(obj); cur == nil || by != "" {
		return nil // never suspended; or still, and being deleted: as it is
	}
	if cur.Status == metav1.ConditionTrue {
		r.Recorder.Event(obj, corev1.EventTypeNormal, status.ReasonResumed, "resumed: reconciled again")
	}
	c := status.New(status.ConditionSuspended, metav1.ConditionFalse, status.ReasonResumed, status.ReasonResumed, "not suspended: reconciled", obj.GetGeneration())
	return &c
}
