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

	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/ownership"
)

const (
	// Finalizer holds a parent that has children outside its namespace
	// until those are deleted: garbage collection cannot, as they carry no
	// owner reference; and a chart's parent with pre-delete or post-delete
	// hooks until they ran. Only such parents get it.
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
// who may write the same metadata: the record that a chart's deletion hooks
// ran lives in the status (deleteHooksRan).
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
// A chart's parent runs its hooks as helm uninstall does: the pre-delete
// hooks before any child goes, the post-delete hooks once every other
// child is gone; each set is recorded in the parent's status once it ran
// (recordDeleteHooks), and the post-delete hooks are then deleted like the
// other children, so that nothing is left behind when the finalizer is
// released.
func (r *Reconciler) finalize(ctx context.Context, obj *unstructured.Unstructured) (Result, error) {
	if !slices.Contains(obj.GetFinalizers(), Finalizer) {
		return Result{}, nil
	}
	ran := deleteHooksRan(obj)
	if r.Kind.Chart != nil && !ran[preDelete.name] {
		if wait, err := r.runDeleteHooks(ctx, obj, preDelete); err != nil || wait {
			return Result{RequeueAfter: deleteHookRetry}, err
		}
		if err := r.recordDeleteHooks(ctx, obj, preDelete); err != nil {
			return Result{}, fmt.Errorf("finalize: record the pre-delete hooks: %w", err)
		}
	}
	// Post-delete hooks wait, neither deleted nor counted, until they ran.
	keepPostHooks := r.Kind.Chart != nil && !ran[postDelete.name]
	remaining, err := r.deleteChildren(ctx, obj, keepPostHooks)
	if err != nil {
		return Result{}, err
	}
	if remaining > 0 {
		// Their deletion events requeue the parent too; this is the bound.
		return Result{RequeueAfter: 2 * time.Second}, nil
	}
	if keepPostHooks {
		if wait, err := r.runDeleteHooks(ctx, obj, postDelete); err != nil || wait {
			return Result{RequeueAfter: deleteHookRetry}, err
		}
		if err := r.recordDeleteHooks(ctx, obj, postDelete); err != nil {
			return Result{}, fmt.Errorf("finalize: record the post-delete hooks: %w", err)
		}
		// The hooks are children now to delete; the pass after finds
		// none left.
		if remaining, err = r.deleteChildren(ctx, obj, false); err != nil || remaining > 0 {
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
// included; with keepPostHooks, a post-delete hook is neither deleted nor
// counted. A kept child (a chart's helm.sh/resource-policy: keep on the
// live object) is neither: helm uninstall leaves it too.
func (r *Reconciler) deleteChildren(ctx context.Context, obj *unstructured.Unstructured, keepPostHooks bool) (remaining int, err error) {
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
			if keepPostHooks && chart.IsPostDeleteHook(c.GetAnnotations()) || r.Kind.Kept(c) {
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
