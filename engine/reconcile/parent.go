package reconcile

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/ownership"
)

const (
	// Finalizer holds a parent that has children outside its namespace
	// until those are deleted: garbage collection cannot, as they carry no
	// owner reference; and a parent whose kind has delete steps with
	// children (a chart's pre-delete or post-delete hooks) until they ran.
	// Only such parents get it.
	Finalizer = "operator.tmplop.io/children"
	// AnnotationPruneHeld records on the parent that the deletion guard is
	// holding a prune back: "<fingerprint> <RFC 3339 time it began>". It
	// lives on the object, not in the operator's memory, so that a restart
	// neither forgets a hold nor restarts its clock.
	AnnotationPruneHeld = "operator.tmplop.io/prune-held"
)

// parentMeta is everything the operator writes to a parent's metadata.
// Server-side apply makes the fields we stop sending disappear, so each
// write carries all of it.
//
// Nothing here is a record the operator trusts against the object's author,
// who may write the same metadata: the record that a delete step ran lives
// in the status (catalog.DeleteStep.Ran).
type parentMeta struct {
	finalizer bool
	pruneHeld string
}

func currentMeta(obj *unstructured.Unstructured) parentMeta {
	return parentMeta{
		finalizer: slices.Contains(obj.GetFinalizers(), Finalizer),
		pruneHeld: obj.GetAnnotations()[AnnotationPruneHeld],
	}
}

// writeParentMeta applies want to the parent's metadata unless it is there
// already. The apply carries the parent's UID: if the object was deleted,
// or deleted and created again, the API server refuses instead of creating
// an empty object or writing to the newcomer.
func (r *Reconciler) writeParentMeta(ctx context.Context, obj *unstructured.Unstructured, want parentMeta) error {
	if currentMeta(obj) == want {
		return nil
	}
	md := map[string]any{"name": obj.GetName(), "uid": string(obj.GetUID())}
	if obj.GetNamespace() != "" {
		md["namespace"] = obj.GetNamespace()
	}
	if want.finalizer {
		md["finalizers"] = []any{Finalizer}
	}
	ann := map[string]any{}
	if want.pruneHeld != "" {
		ann[AnnotationPruneHeld] = want.pruneHeld
	}
	if len(ann) > 0 {
		md["annotations"] = ann
	}
	patch := &unstructured.Unstructured{Object: map[string]any{"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(), "metadata": md}}
	live, err := r.Client.Apply(ctx, patch)
	if err != nil {
		r.writeFailed(obj, err)
		return fmt.Errorf("write the parent's metadata: %w", err)
	}
	r.Stats.add(&r.Stats.ParentWrites)
	klog.FromContext(ctx).V(2).Info("Wrote the parent's metadata", "finalizer", want.finalizer, "pruneHeld", want.pruneHeld, "resourceVersion", live.GetResourceVersion())
	r.wrote(live)
	obj.SetFinalizers(live.GetFinalizers())
	obj.SetAnnotations(live.GetAnnotations())
	return nil
}

// finalize deletes the children of a parent being deleted when it holds our
// finalizer, then releases it. Children are listed live across every kind
// the parent's kind has ever applied (the inventory), not from caches:
// after a restart the caches may not watch their kinds yet, and deleting a
// parent is rare.
//
// The kind's delete steps (catalog.DeleteStep: a chart's hooks, run as
// helm uninstall runs them) run around it: the ones that are not Last
// before any child goes, the Last ones once every other child is gone;
// each is recorded in the parent's status once it ran (recordDeleteStep),
// and the children of the Last ones are then deleted like the others, so
// that nothing is left behind when the finalizer is released.
func (r *Reconciler) finalize(ctx context.Context, obj *unstructured.Unstructured) (Result, error) {
	if !slices.Contains(obj.GetFinalizers(), Finalizer) {
		return Result{}, nil
	}
	// The Last steps not run yet: their children wait, neither deleted
	// nor counted, until they ran.
	var last []catalog.DeleteStep
	for _, step := range r.Kind.DeleteSteps() {
		switch {
		case step.Ran(obj.Object):
			// recorded for this deletion: not again
		case step.Last:
			last = append(last, step)
		default:
			if res, ok, err := r.deleteStep(ctx, obj, step); !ok {
				return res, err
			}
		}
	}
	remaining, err := r.deleteChildren(ctx, obj, last)
	if err != nil {
		return Result{}, err
	}
	if remaining > 0 {
		// Their deletion events requeue the parent too; this is the bound.
		return Result{RequeueAfter: 2 * time.Second}, nil
	}
	for _, step := range last {
		if res, ok, err := r.deleteStep(ctx, obj, step); !ok {
			return res, err
		}
	}
	if len(last) > 0 {
		// Their children are children now to delete; the pass after
		// finds none left.
		if remaining, err = r.deleteChildren(ctx, obj, nil); err != nil || remaining > 0 {
			return Result{RequeueAfter: 2 * time.Second}, err
		}
	}
	if err := r.writeParentMeta(ctx, obj, parentMeta{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return Result{}, fmt.Errorf("finalize: release the finalizer: %w", err)
	}
	return Result{}, nil
}

// deleteChildren deletes the children of obj that are not being deleted
// yet, and returns how many are left in the cluster, those being deleted
// included; a child of one of the steps spared (delete steps not run yet)
// is neither deleted nor counted. A kept child (catalog.Kind.Kept, on the
// live object) is neither: a chart's helm.sh/resource-policy: keep, which
// helm uninstall leaves too.
func (r *Reconciler) deleteChildren(ctx context.Context, obj *unstructured.Unstructured, spared []catalog.DeleteStep) (remaining int, err error) {
	gks, err := r.Inventory.ChildKinds(ctx, r.Kind.GVK.GroupKind())
	if err != nil {
		return 0, fmt.Errorf("finalize: %w", err)
	}
	sel := ownership.Selector(r.Manager, obj.GetUID())
	for _, gk := range gks {
		m, err := r.Client.PreferredKind(gk)
		if meta.IsNoMatchError(err) {
			continue // the kind itself is gone, and its objects with it
		}
		if err != nil {
			return 0, fmt.Errorf("finalize: %w", err)
		}
		list, err := r.Client.List(ctx, m, metav1.NamespaceAll, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return 0, fmt.Errorf("finalize: list %s: %w", gk, err)
		}
		for i := range list.Items {
			c := &list.Items[i]
			if slices.ContainsFunc(spared, func(s catalog.DeleteStep) bool { return s.Holds(c) }) || r.Kind.Kept(c) {
				continue
			}
			remaining++
			if c.GetDeletionTimestamp() != nil {
				continue
			}
			if err := r.Client.Delete(ctx, m.GroupVersionKind, c.GetNamespace(), c.GetName(), c.GetUID()); err != nil {
				return 0, fmt.Errorf("finalize: delete %s %s/%s: %w", gk, c.GetNamespace(), c.GetName(), err)
			}
			klog.FromContext(ctx).V(2).Info("Deleted child of a deleted parent", "kind", gk, "namespace", c.GetNamespace(), "name", c.GetName())
		}
	}
	klog.FromContext(ctx).V(2).Info("Finalizing", "childKinds", len(gks), "remaining", remaining)
	return remaining, nil
}
