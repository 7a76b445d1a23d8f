package apply

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tmplop/operator/engine/kube"
)

// Owned returns the children of the parent with uid among the resources
// of mappings (the prune scope: every kind the parent's kind has ever
// applied). Each resource's cache is ensured first, so that the answer is
// complete: pruning from a partial view could only miss deletions, but the
// deletion guard must count every child.
func (a *Applier) Owned(ctx context.Context, c *kube.Client, mappings []*meta.RESTMapping, uid types.UID) (map[Key]Child, error) {
	return a.collect(ctx, c, mappings, func(gr schema.GroupResource) []Child {
		return a.cache.Children(gr, uid)
	})
}

// Unowned returns the operator's children among the resources of mappings
// that no controller owns: those outside their parent's namespace, which
// garbage collection will never delete.
func (a *Applier) Unowned(ctx context.Context, c *kube.Client, mappings []*meta.RESTMapping) (map[Key]Child, error) {
	return a.collect(ctx, c, mappings, func(gr schema.GroupResource) []Child {
		var out []Child
		for _, o := range a.cache.List(gr) {
			if metav1.GetControllerOfNoCopy(o) == nil {
				out = append(out, o)
			}
		}
		return out
	})
}

// collect ensures the cache of each resource of mappings and gathers what
// pick returns from it.
func (a *Applier) collect(ctx context.Context, c *kube.Client, mappings []*meta.RESTMapping, pick func(schema.GroupResource) []Child) (map[Key]Child, error) {
	out := map[Key]Child{}
	for _, m := range mappings {
		preferred, err := c.Preferred(m)
		if err != nil {
			return nil, err
		}
		if err := a.cache.Ensure(ctx, preferred); err != nil {
			return nil, fmt.Errorf("watch %s: %w", m.Resource.GroupResource(), err)
		}
		gr := m.Resource.GroupResource()
		for _, o := range pick(gr) {
			out[Key{GR: gr, Namespace: o.GetNamespace(), Name: o.GetName()}] = o
		}
	}
	return out, nil
}

// Delete deletes children, each with a UID precondition so that an object
// re-created under the same name in the meantime is left alone, and returns
// the keys it deleted.
func (a *Applier) Delete(ctx context.Context, c *kube.Client, children map[Key]Child) ([]Key, error) {
	var deleted []Key
	var errs []error
	for key, o := range children {
		if err := c.Delete(ctx, o.GroupVersionKind(), key.Namespace, key.Name, o.GetUID()); err != nil {
			errs = append(errs, fmt.Errorf("prune %s: %w", key, err))
			continue
		}
		a.Forget(key)
		deleted = append(deleted, key)
	}
	return deleted, errors.Join(errs...)
}
