package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/reconcile"
)

// syncTimeout bounds how long a reconcile waits for a new watch to list
// its objects before it gives up and is retried.
const syncTimeout = 30 * time.Second

// parentUIDIndex indexes children by their parent's UID, so that listing a
// parent's children costs what it has, not what all parents have.
const parentUIDIndex = "parent-uid"

// childWatches is the apply.Cache: for each group and resource the
// operator applies, two watches at the preferred version, shared by every
// kind, split by the operator's managed-by label on the server. One holds
// the operator's own children (compact); the other a stub of the metadata
// of every other object, which is what tells an object someone else made
// from a name that is free. Split so, each event is received once.
type childWatches struct {
	ctx       context.Context
	watches   *cached.Client
	meta      metadata.Interface
	manager   string
	namespace string
	// route enqueues the parent of a child that changed.
	route   func(p ownership.Parent)
	applier *apply.Applier

	mu      sync.Mutex
	byGR    map[schema.GroupResource]*childWatch
	waiting map[apply.Key][]ownership.Parent
}

type childWatch struct {
	ours, others cache.SharedIndexInformer
}

var _ apply.Cache = (*childWatches)(nil)

// Ensure implements apply.Cache.
func (w *childWatches) Ensure(ctx context.Context, m *meta.RESTMapping) error {
	cw := w.watch(m)
	if cw.ours.HasSynced() && cw.others.HasSynced() {
		return nil
	}
	if !waitSynced(ctx, cw.ours.HasSynced, cw.others.HasSynced) {
		return fmt.Errorf("watch of %s has not listed its objects: %w", m.Resource.GroupResource(), reconcile.ErrNotReady)
	}
	return nil
}

// waitSynced waits until every informer has listed, at most syncTimeout.
// It polls every 10 ms: cache.WaitForCacheSync's 100 ms is a tenth of a
// second added to the first reconcile of every kind.
func waitSynced(ctx context.Context, synced ...cache.InformerSynced) bool {
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, s := range synced {
			if !s() {
				return false, nil
			}
		}
		return true, nil
	})
	return err == nil
}

func (w *childWatches) watch(m *meta.RESTMapping) *childWatch {
	gr := m.Resource.GroupResource()
	w.mu.Lock()
	defer w.mu.Unlock()
	if cw, ok := w.byGR[gr]; ok {
		return cw
	}
	ns := metav1.NamespaceAll
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns = w.namespace
	}
	selector := ownership.ManagedSelector(w.manager)
	cw := &childWatch{
		ours: startInformer(w.ctx, w.watches, m.Resource, ns, selector, cache.Indexers{parentUIDIndex: byParentUID},
			func(c *cached.Object, deleted bool) { w.notify(gr, c, deleted) }),
		others: startMetadataInformer(w.ctx, w.meta, m.Resource, ns, ownership.UnmanagedSelector(w.manager),
			func(p *metav1.PartialObjectMetadata, _ bool) {
				w.wake(apply.Key{GR: gr, Namespace: p.Namespace, Name: p.Name})
			}),
	}
	w.byGR[gr] = cw
	klog.FromContext(w.ctx).V(1).Info("Watching children", "resource", m.Resource.String(), "selector", selector)
	return cw
}

func byParentUID(obj any) ([]string, error) {
	if o, ok := obj.(metav1.Object); ok {
		if uid := o.GetLabels()[ownership.LabelParentUID]; uid != "" {
			return []string{uid}, nil
		}
	}
	return nil, nil
}

// notify maps an event of one of our children to its parent. The echo of
// our own apply is dropped: the parent that applied it already holds the
// result, and re-queuing it is how a template that renders a new value
// each time would write forever.
func (w *childWatches) notify(gr schema.GroupResource, c *cached.Object, deleted bool) {
	key := apply.Key{GR: gr, Namespace: c.GetNamespace(), Name: c.GetName()}
	w.wake(key)
	if deleted {
		w.applier.Forget(key)
	} else if w.applier.OwnEvent(key, c) {
		return
	}
	w.routeParentOf(c)
}

// routeParentOf enqueues the parent a child names.
func (w *childWatches) routeParentOf(u metav1.Object) {
	p, err := ownership.ParseParent(u.GetAnnotations()[ownership.AnnotationParent])
	if err != nil {
		return // labeled by hand, or by another tool: not ours to map
	}
	w.route(p)
}

// wake enqueues the parents waiting for the object at key to go, or to
// consent to adoption.
func (w *childWatches) wake(key apply.Key) {
	w.mu.Lock()
	parents := w.waiting[key]
	delete(w.waiting, key)
	w.mu.Unlock()
	for _, parent := range parents {
		w.route(parent)
	}
}

// WaitFor records that parent could not take the object at key.
func (w *childWatches) WaitFor(key apply.Key, parent ownership.Parent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.waiting[key] {
		if p == parent {
			return
		}
	}
	w.waiting[key] = append(w.waiting[key], parent)
}

func (w *childWatches) informers(gr schema.GroupResource) *childWatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.byGR[gr]
}

// Get implements apply.Cache.
func (w *childWatches) Get(gr schema.GroupResource, namespace, name string) (*unstructured.Unstructured, bool) {
	cw := w.informers(gr)
	if cw == nil {
		return nil, false
	}
	o, exists, err := cw.ours.GetIndexer().GetByKey(cacheKey(namespace, name))
	if err != nil || !exists {
		return nil, false
	}
	c, ok := o.(*cached.Object)
	if !ok {
		return nil, false
	}
	u, err := c.Object()
	if err != nil {
		return nil, false
	}
	return u, true
}

// Peek implements apply.Cache.
func (w *childWatches) Peek(gr schema.GroupResource, namespace, name string) (metav1.Object, bool) {
	cw := w.informers(gr)
	if cw == nil {
		return nil, false
	}
	o, exists, err := cw.ours.GetIndexer().GetByKey(cacheKey(namespace, name))
	if err != nil || !exists {
		return nil, false
	}
	c, ok := o.(*cached.Object)
	return c, ok
}

// Occupant implements apply.Cache.
func (w *childWatches) Occupant(gr schema.GroupResource, namespace, name string) (metav1.Object, bool) {
	if ours, ok := w.Peek(gr, namespace, name); ok {
		return ours, true
	}
	cw := w.informers(gr)
	if cw == nil {
		return nil, false
	}
	o, exists, err := cw.others.GetIndexer().GetByKey(cacheKey(namespace, name))
	if err != nil || !exists {
		return nil, false
	}
	m, ok := o.(metav1.Object)
	return m, ok
}

// Children implements apply.Cache.
func (w *childWatches) Children(gr schema.GroupResource, parentUID types.UID) []apply.Child {
	cw := w.informers(gr)
	if cw == nil {
		return nil
	}
	objs, err := cw.ours.GetIndexer().ByIndex(parentUIDIndex, string(parentUID))
	if err != nil {
		return nil
	}
	return w.managed(objs)
}

// managed keeps the objects that carry this operator's managed-by label.
func (w *childWatches) managed(objs []any) []apply.Child {
	out := make([]apply.Child, 0, len(objs))
	for _, o := range objs {
		if c, ok := o.(*cached.Object); ok && c.GetLabels()[ownership.LabelManagedBy] == w.manager {
			out = append(out, c)
		}
	}
	return out
}

// List implements apply.Cache.
func (w *childWatches) List(gr schema.GroupResource) []apply.Child {
	cw := w.informers(gr)
	if cw == nil {
		return nil
	}
	return w.managed(cw.ours.GetIndexer().List())
}
