package reconcile

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/ownership"
)

// A child outside its parent's namespace has no owner reference, so only
// the parent's finalizer deletes it. The finalizer is not enough: the API
// server deletes an object that had no finalizer when a DELETE read it even
// if a finalizer was added in the meantime (its conditional delete retries
// on the fresh object without looking at finalizers). A parent created and
// deleted at once can thus vanish while its first reconcile applies its
// children. Two things catch those:
//
//   - verifyParent, right after a reconcile created such children: if the
//     parent is gone, it deletes what it just created;
//   - Sweep, when a kind starts and periodically: it deletes the kind's
//     unowned children whose parent no longer exists, which also covers an
//     operator that crashed in between.

// verifyParent checks, after children outside the namespace were created,
// that the parent still exists; if not, it deletes them and reports
// errParentGone.
func (r *Reconciler) verifyParent(ctx context.Context, obj *unstructured.Unstructured, created map[apply.Key]apply.Child) error {
	if len(created) == 0 {
		return nil
	}
	m, err := r.Client.Mapping(obj.GroupVersionKind())
	if err != nil {
		return err
	}
	live, err := r.Client.Get(ctx, m, obj.GetNamespace(), obj.GetName())
	if err == nil && live.GetUID() == obj.GetUID() {
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	deleted, err := r.Applier.Delete(ctx, r.Client, created)
	klog.FromContext(ctx).Info("Parent deleted while its children were applied; deleted them", "children", len(deleted))
	if err != nil {
		return err
	}
	return errParentGone
}

var errParentGone = fmt.Errorf("the parent was deleted while its children were applied")

// Sweep deletes the kind's children that no controller owns (those
// outside their parent's namespace) and whose parent no longer exists.
// exists tells whether a parent of the kind exists, and its UID; it must
// ask the API server when its cache has no such object, as a kind's
// selector hides objects that exist. A kept child (catalog.Kind.Kept) has
// no owner either, and outlives its parent on purpose: it stays.
func (r *Reconciler) Sweep(ctx context.Context, exists func(ctx context.Context, namespace, name string) (types.UID, bool, error)) (int, error) {
	mappings, err := r.pruneScope(ctx, &Plan{})
	if err != nil {
		return 0, err
	}
	unowned, err := r.Applier.Unowned(ctx, r.Client, mappings)
	if err != nil {
		return 0, err
	}
	gk := r.Kind.GVK.GroupKind()
	orphans := map[apply.Key]apply.Child{}
	for k, o := range unowned {
		p, err := ownership.ParseParent(o.GetAnnotations()[ownership.AnnotationParent])
		if err != nil || p.GroupKind != gk || r.Kind.Kept(o) {
			continue
		}
		uid, ok, err := exists(ctx, p.Namespace, p.Name)
		if err != nil {
			return 0, err
		}
		if !ok || string(uid) != o.GetLabels()[ownership.LabelParentUID] {
			orphans[k] = o
		}
	}
	deleted, err := r.Applier.Delete(ctx, r.Client, orphans)
	for _, k := range deleted {
		r.Stats.add(&r.Stats.Pruned)
		klog.FromContext(ctx).Info("Deleted a child whose parent is gone", "child", k.String())
	}
	return len(deleted), err
}
