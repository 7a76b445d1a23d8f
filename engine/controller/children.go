package controller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/ownership"
)

// childWatches holds one informer per child resource, filtered by the
// managed-by label so that the operator caches only what it manages. It is
// the apply.Cache of the Applier.
type childWatches struct {
	ctx       context.Context
	dyn       dynamic.Interface
	manager   string
	namespace string
	// route enqueues the parent of a child that changed.
	route func(p ownership.Parent)
	// forget drops what the applier remembers of a deleted child.
	forget func(apply.Key)

	mu        sync.RWMutex
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
}

var _ apply.Cache = (*childWatches)(nil)

// Ensure starts watching m's resource if it is not watched yet.
func (w *childWatches) Ensure(m *meta.RESTMapping) {
	w.mu.RLock()
	_, ok := w.informers[m.Resource]
	w.mu.RUnlock()
	if ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.informers[m.Resource]; ok {
		return
	}
	ns := metav1.NamespaceAll
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns = w.namespace
	}
	selector := ownership.ManagedSelector(w.manager)
	gvr := m.Resource
	w.informers[gvr] = startInformer(w.ctx, w.dyn, gvr, ns, selector, func(u *unstructured.Unstructured, deleted bool) {
		w.notify(gvr, u, deleted)
	})
	klog.FromContext(w.ctx).V(1).Info("Watching children", "resource", gvr.String(), "selector", selector)
}

func (w *childWatches) notify(gvr schema.GroupVersionResource, u *unstructured.Unstructured, deleted bool) {
	if deleted {
		w.forget(apply.Key{GVR: gvr, Namespace: u.GetNamespace(), Name: u.GetName()})
	}
	p, err := ownership.ParseParent(u.GetAnnotations()[ownership.AnnotationParent])
	if err != nil {
		return // labeled by hand, or by another tool: not ours to map
	}
	w.route(p)
}

// Get implements apply.Cache.
func (w *childWatches) Get(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, bool) {
	w.mu.RLock()
	inf, ok := w.informers[gvr]
	w.mu.RUnlock()
	if !ok || !inf.HasSynced() {
		return nil, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	o, exists, err := inf.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil, false
	}
	u, ok := o.(*unstructured.Unstructured)
	return u, ok
}

// List implements apply.Cache. Until an informer has synced its list is
// incomplete, so it returns nothing for it: pruning then waits for the next
// reconcile rather than acting on a partial view (which could only miss
// deletions, never add wrong ones).
func (w *childWatches) List(gvr schema.GroupVersionResource, selector labels.Selector) []*unstructured.Unstructured {
	w.mu.RLock()
	inf, ok := w.informers[gvr]
	w.mu.RUnlock()
	if !ok || !inf.HasSynced() {
		return nil
	}
	var out []*unstructured.Unstructured
	for _, o := range inf.GetIndexer().List() {
		if u, ok := o.(*unstructured.Unstructured); ok && selector.Matches(labels.Set(u.GetLabels())) {
			out = append(out, u)
		}
	}
	return out
}

// Watched implements apply.Cache.
func (w *childWatches) Watched() []schema.GroupVersionResource {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make([]schema.GroupVersionResource, 0, len(w.informers))
	for gvr := range w.informers {
		out = append(out, gvr)
	}
	return out
}
