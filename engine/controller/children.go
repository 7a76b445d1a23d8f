package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/shard"
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
// the operator's own children (compact), whole when matched to a parent
// served, else a stub of their metadata (admission.go): anyone may write
// the label. The other holds a stub of the metadata of every other object,
// which is what tells an object someone else made from a name that is
// free. Split so, each event is received once.
//
// Both are watched as the operator (whatever identity the kinds have), in
// the Manager's watch set, held for the kinds that applied or pruned the
// resource: they stop when the last of those kinds stops for good (a
// restart with a changed folder keeps them, so that it costs no list).
type childWatches struct {
	ctx       context.Context
	set       *watchSet
	client    *kube.Client // the operator's own
	manager   string
	namespace string
	// shard is this replica's shard (run --sharding); "": not sharded.
	// A sharded replica watches only the children its shard applied, so
	// a name missing from its caches is read from the server (Missed).
	shard string
	// route enqueues the parent of a child that changed.
	route   func(p ownership.Parent)
	applier *apply.Applier
	// parents returns the view of a served kind's objects that admission
	// reads; false for a kind not served.
	parents func(schema.GroupKind) (parentView, bool)

	mu      sync.Mutex
	byGR    map[schema.GroupResource]*childWatch
	waiting map[apply.Key][]ownership.Parent
}

type childWatch struct {
	ours, others *watchHandle
	// mapping is the resource's, at the version watched: what reads a
	// child the watch keeps as a stub.
	mapping *meta.RESTMapping
	// kinds are those that ensured the watch; the zero GroupKind stands
	// for a caller outside any kind, held until the Manager stops.
	kinds map[schema.GroupKind]bool
}

var (
	_ apply.Cache   = (*childWatches)(nil)
	_ apply.Partial = (*childWatches)(nil)
)

// kindKey is the context key of the kind a call is made for.
type kindKey struct{}

// withKind tells the calls made with ctx that they are kind gk's: the
// applier's Ensure reaches childWatches through apply.Cache, which knows
// no kinds, and the kind is who holds the watch it starts.
func withKind(ctx context.Context, gk schema.GroupKind) context.Context {
	return context.WithValue(ctx, kindKey{}, gk)
}

func kindOf(ctx context.Context) schema.GroupKind {
	gk, _ := ctx.Value(kindKey{}).(schema.GroupKind)
	return gk
}

// Ensure implements apply.Cache.
func (w *childWatches) Ensure(ctx context.Context, m *meta.RESTMapping) error {
	cw := w.watch(ctx, m)
	if cw.ours.hasSynced() && cw.others.hasSynced() {
		return nil
	}
	if !waitSynced(ctx, cw.ours.hasSynced, cw.others.hasSynced) {
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

// watch returns the watches of m's resource, started if needed, held for
// the kind of ctx.
func (w *childWatches) watch(ctx context.Context, m *meta.RESTMapping) *childWatch {
	gr := m.Resource.GroupResource()
	gk := kindOf(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	if cw, ok := w.byGR[gr]; ok {
		cw.kinds[gk] = true
		return cw
	}
	ns := metav1.NamespaceAll
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns = w.namespace
	}
	selector := ownership.ManagedSelector(w.manager)
	if w.shard != "" {
		selector += "," + shard.HeldByLabel + "=" + w.shard
	}
	cw := &childWatch{
		ours: w.set.acquire(w.client, watchKey{gvr: m.Resource, namespace: ns, selector: selector, children: true},
			cache.Indexers{parentUIDIndex: byParentUID},
			handler(onObject(func(c *cached.Object, deleted bool) { w.notify(gr, c, deleted) }))),
		others: w.set.acquire(w.client, watchKey{gvr: m.Resource, namespace: ns, selector: ownership.UnmanagedSelector(w.manager), metadata: true},
			nil, handler(onMetadata(func(p *metav1.PartialObjectMetadata) {
				w.wake(apply.Key{GR: gr, Namespace: p.Namespace, Name: p.Name})
			}))),
		mapping: m,
		kinds:   map[schema.GroupKind]bool{gk: true},
	}
	w.byGR[gr] = cw
	klog.FromContext(w.ctx).V(1).Info("Watching children", "resource", m.Resource.String(), "selector", selector)
	return cw
}

// release lets go of the watches kind gk held; those no other kind holds
// stop.
func (w *childWatches) release(gk schema.GroupKind) {
	var stop []*childWatch
	w.mu.Lock()
	for gr, cw := range w.byGR {
		delete(cw.kinds, gk)
		if len(cw.kinds) == 0 {
			stop = append(stop, cw)
			delete(w.byGR, gr)
		}
	}
	w.mu.Unlock()
	for _, cw := range stop {
		cw.ours.release()
		cw.others.release()
	}
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

// Get implements apply.Cache: a child the watch keeps whole is decoded
// from it; one it keeps as a stub (admission.go) is read from the API
// server, as the operator, as the watches are.
func (w *childWatches) Get(ctx context.Context, gr schema.GroupResource, namespace, name string) (*unstructured.Unstructured, bool, error) {
	cw := w.informers(gr)
	if cw == nil {
		return nil, false, nil
	}
	o, exists, err := cw.ours.informer().GetIndexer().GetByKey(objectKey(namespace, name))
	if err != nil || !exists {
		return nil, false, err
	}
	c, ok := o.(*cached.Object)
	if !ok {
		return nil, false, nil
	}
	if !c.Stubbed() {
		u, err := c.Object()
		return u, err == nil, err
	}
	live, err := w.client.Get(ctx, cw.mapping, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s %s, cached as metadata only: %w", gr, objectKey(namespace, name), err)
	}
	live.SetManagedFields(nil) // as the cache keeps its objects
	return live, true, nil
}

// Peek implements apply.Cache.
func (w *childWatches) Peek(gr schema.GroupResource, namespace, name string) (metav1.Object, bool) {
	cw := w.informers(gr)
	if cw == nil {
		return nil, false
	}
	o, exists, err := cw.ours.informer().GetIndexer().GetByKey(objectKey(namespace, name))
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
	o, exists, err := cw.others.informer().GetIndexer().GetByKey(objectKey(namespace, name))
	if err != nil || !exists {
		return nil, false
	}
	m, ok := o.(metav1.Object)
	return m, ok
}

// Missed implements apply.Partial: complete caches (not sharded) miss
// nothing; a sharded replica's miss may be another shard's child, read
// live as the operator, as the watches are.
func (w *childWatches) Missed(ctx context.Context, m *meta.RESTMapping, namespace, name string) (*unstructured.Unstructured, error) {
	if w.shard == "" {
		return nil, nil
	}
	live, err := w.client.Get(ctx, m, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return live, err
}

// moveChildren labels the children of the parent with parentUID that
// this shard holds with shard to, through client (the parent's kind's),
// each on the condition that it did not change since the watch saw it:
// the first step of handing the parent over. A child that changed
// meanwhile fails the step, which is retried.
func (w *childWatches) moveChildren(ctx context.Context, client *kube.Client, parentUID types.UID, to string) error {
	w.mu.Lock()
	watches := make([]*childWatch, 0, len(w.byGR))
	for _, cw := range w.byGR {
		watches = append(watches, cw)
	}
	w.mu.Unlock()
	for _, cw := range watches {
		gvr := cw.ours.key.gvr
		objs, err := cw.ours.informer().GetIndexer().ByIndex(parentUIDIndex, string(parentUID))
		if err != nil {
			return err
		}
		for _, obj := range objs {
			o, ok := obj.(metav1.Object)
			if !ok {
				continue
			}
			patch, err := shard.HeldByPatch(to, o.GetResourceVersion())
			if err != nil {
				return err
			}
			_, err = client.PatchMetadata(ctx, gvr, o.GetNamespace(), o.GetName(), patch)
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("move %s %s to shard %s: %w", gvr.Resource, objectKey(o.GetNamespace(), o.GetName()), to, err)
			}
		}
	}
	return nil
}

// Children implements apply.Cache.
func (w *childWatches) Children(gr schema.GroupResource, parentUID types.UID) []apply.Child {
	cw := w.informers(gr)
	if cw == nil {
		return nil
	}
	objs, err := cw.ours.informer().GetIndexer().ByIndex(parentUIDIndex, string(parentUID))
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
	return w.managed(cw.ours.informer().GetIndexer().List())
}
