package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/ownership"
)

const (
	// Finalizer holds a parent whose kind may have children outside its
	// namespace until those are deleted: garbage collection cannot, as
	// they carry no owner reference.
	Finalizer = "operator.tmplop.io/children"
	// The parent's ApplySet metadata (KEP-3659), so that kubectl users see
	// what set a child belongs to, and so that the finalizer knows which
	// kinds to look for after a restart.
	labelApplySetID            = "applyset.kubernetes.io/id"
	annotationApplySetTooling  = "applyset.kubernetes.io/tooling"
	annotationContainsGroupKnd = "applyset.kubernetes.io/contains-group-kinds"
	tooling                    = "tmplop-operator/v1"
)

// ensureParent gives the parent its ApplySet label and annotations and, for
// kinds that allow children outside the namespace, the finalizer. Before the
// applies (grow) the group-kinds are the union of the recorded and the
// planned ones, so that a crash between apply and prune never hides a
// child; after the prune they are exactly the planned ones. It writes only
// when something differs.
func (r *Reconciler) ensureParent(ctx context.Context, obj *unstructured.Unstructured, plan *Plan, grow bool) error {
	gks := map[string]bool{}
	for _, c := range plan.Children {
		gks[c.Object.GroupVersionKind().GroupKind().String()] = true
	}
	if grow {
		for _, gk := range recordedGroupKinds(obj) {
			gks[gk] = true
		}
	}
	contains := strings.Join(slices.Sorted(maps.Keys(gks)), ",")
	id := ownership.ApplySetID(ownership.ParentOf(obj))
	wantFinalizer := r.Kind.Spec.AllowClusterScoped
	if obj.GetLabels()[labelApplySetID] == id &&
		obj.GetAnnotations()[annotationApplySetTooling] == tooling &&
		obj.GetAnnotations()[annotationContainsGroupKnd] == contains &&
		slices.Contains(obj.GetFinalizers(), Finalizer) == wantFinalizer {
		return nil
	}
	md := map[string]any{
		"name":        obj.GetName(),
		"namespace":   obj.GetNamespace(),
		"labels":      map[string]any{labelApplySetID: id},
		"annotations": map[string]any{annotationApplySetTooling: tooling, annotationContainsGroupKnd: contains},
	}
	if wantFinalizer {
		md["finalizers"] = []any{Finalizer}
	}
	patch := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(), "metadata": md,
	}}
	if _, err := r.Client.Apply(ctx, patch); err != nil {
		return fmt.Errorf("record ApplySet metadata on the parent: %w", err)
	}
	r.Stats.add(&r.Stats.ParentWrites)
	return nil
}

func recordedGroupKinds(obj *unstructured.Unstructured) []string {
	v := obj.GetAnnotations()[annotationContainsGroupKnd]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// finalize deletes the children of a parent being deleted when it holds our
// finalizer, then releases it. Children are listed live, not from caches:
// after a restart the caches may not watch their kinds yet, and deleting a
// parent is rare.
func (r *Reconciler) finalize(ctx context.Context, obj *unstructured.Unstructured) (Result, error) {
	if !slices.Contains(obj.GetFinalizers(), Finalizer) {
		return Result{}, nil
	}
	sel := ownership.Selector(r.Manager, ownership.ParentOf(obj), obj.GetUID())
	remaining := 0
	for _, gk := range recordedGroupKinds(obj) {
		m, err := r.Client.Mapper.RESTMapping(schema.ParseGroupKind(gk))
		if meta.IsNoMatchError(err) {
			continue // the kind itself is gone, and its objects with it
		}
		if err != nil {
			return Result{}, fmt.Errorf("finalize: map %s: %w", gk, err)
		}
		list, err := r.Client.Dynamic.Resource(m.Resource).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return Result{}, fmt.Errorf("finalize: list %s: %w", gk, err)
		}
		for _, c := range list.Items {
			remaining++
			if c.GetDeletionTimestamp() != nil {
				continue
			}
			if err := r.Client.Delete(ctx, m.GroupVersionKind, c.GetNamespace(), c.GetName(), c.GetUID()); err != nil {
				return Result{}, fmt.Errorf("finalize: delete %s %s/%s: %w", gk, c.GetNamespace(), c.GetName(), err)
			}
			klog.FromContext(ctx).V(2).Info("Deleted child of a deleted parent", "kind", gk, "namespace", c.GetNamespace(), "name", c.GetName())
		}
	}
	if remaining > 0 {
		// Their deletion events requeue the parent too; this is the bound.
		return Result{RequeueAfter: 2 * time.Second}, nil
	}
	patch := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(),
		"metadata": map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()},
	}}
	// Applying our fields without the finalizer removes it and nothing of
	// anybody else's.
	if _, err := r.Client.Apply(ctx, patch); err != nil && !apierrors.IsNotFound(err) {
		return Result{}, fmt.Errorf("finalize: release the finalizer: %w", err)
	}
	r.Stats.add(&r.Stats.ParentWrites)
	return Result{}, nil
}
