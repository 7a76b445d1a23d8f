package apply

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tmplop/operator/engine/kube"
)

// Owned returns the watched children of every watched resource that match
// selector (a parent's identity labels).
func (a *Applier) Owned(selector labels.Selector) map[Key]*unstructured.Unstructured {
	out := map[Key]*unstructured.Unstructured{}
	if a.cache == nil {
		return out
	}
	for _, gvr := range a.cache.Watched() {
		for _, o := range a.cache.List(gvr, selector) {
			out[Key{GVR: gvr, Namespace: o.GetNamespace(), Name: o.GetName()}] = o
		}
	}
	return out
}

// Prune deletes the children matching selector that are not in keep, and
// returns what it deleted. The selector must hold the parent's identity and
// the manager label (ownership.Selector): only children that carry both are
// ever deleted, each with a UID precondition so that an object re-created
// under the same name in the meantime is left alone.
func (a *Applier) Prune(ctx context.Context, c *kube.Client, selector labels.Selector, keep map[Key]bool) ([]Key, error) {
	var deleted []Key
	var errs []error
	for key, o := range a.Owned(selector) {
		if keep[key] || o.GetDeletionTimestamp() != nil {
			continue
		}
		m, err := c.Mapping(o.GroupVersionKind())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := c.Delete(ctx, m.GroupVersionKind, key.Namespace, key.Name, o.GetUID()); err != nil {
			errs = append(errs, fmt.Errorf("prune %s: %w", key, err))
			continue
		}
		a.Forget(key)
		deleted = append(deleted, key)
	}
	return deleted, errors.Join(errs...)
}
