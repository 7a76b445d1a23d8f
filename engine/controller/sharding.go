package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/requeue"
	"github.com/tmplop/operator/engine/shard"
)

// shardState is what a sharded kind remembers of its moves.
type shardState struct {
	mu sync.Mutex
	// handed holds the version at which each object was handed over, until
	// the watch takes it out of the cache (its label no longer selects
	// it): in that window the cache still shows it as this shard's, and a
	// child's event must not reconcile it beside its new holder.
	handed map[cache.ObjectName]string
	// sharder is the kind's sharder while this replica is the ring's.
	sharder atomic.Pointer[shard.Sharder]
}

func (s *shardState) handedOver(key cache.ObjectName, resourceVersion string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.handed[key]
	return ok && v == resourceVersion
}

// remember records that key was handed over at resourceVersion, unless
// store (the kind's cache) no longer holds that version: the watch then
// delivered the move already, and its deletion (forget) may have run, so
// that an entry made now would never be dropped.
func (s *shardState) remember(key cache.ObjectName, resourceVersion string, store cache.Store) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok, _ := store.GetByKey(key.String())
	if m, isMeta := cur.(metav1.Object); !ok || !isMeta || m.GetResourceVersion() != resourceVersion {
		return
	}
	if s.handed == nil {
		s.handed = map[cache.ObjectName]string{}
	}
	s.handed[key] = resourceVersion
}

func (s *shardState) forget(key cache.ObjectName) {
	s.mu.Lock()
	delete(s.handed, key)
	s.mu.Unlock()
}

// selector is the kind's objects' label selector: its folder's, and for a
// shard, only the objects labelled with it.
func (c *kindController) selector() string {
	sel := c.kind.ObjectSelector()
	if c.sharding == nil {
		return sel
	}
	own := shard.ShardLabel + "=" + c.sharding.ID
	if sel == "" {
		return own
	}
	return sel + "," + own
}

// ringObject is what shard.Decide needs of o.
func (c *kindController) ringObject(o metav1.Object) shard.Object {
	gvk := c.kind.GVK
	return shard.Object{
		Key:      shard.Key(gvk.Group, gvk.Kind, o.GetNamespace(), o.GetName()),
		Shard:    o.GetLabels()[shard.ShardLabel],
		Deleting: o.GetDeletionTimestamp() != nil,
	}
}

// followRing queues, at every change of the ring, the objects this shard
// holds that now belong to another: their worker hands them over (holds).
func (c *kindController) followRing(ctx context.Context, watch *watchHandle, queue workqueue.TypedRateLimitingInterface[cache.ObjectName]) {
	if !waitSynced(ctx, watch.hasSynced) {
		// The first pass waits for the list; a later ring change
		// queues what it needs from whatever the cache holds then.
		if ctx.Err() != nil {
			return
		}
	}
	log := klog.FromContext(ctx)
	for {
		ring, changed := c.sharding.Members.Ring()
		moving := 0
		for _, obj := range watch.informer().GetStore().List() {
			o, ok := obj.(metav1.Object)
			if !ok {
				continue
			}
			if shard.Decide(c.ringObject(o), ring, ring.Has, c.sharding.ID).Verb == shard.HandOver {
				queue.Add(cache.MetaObjectToName(o))
				moving++
			}
		}
		if moving > 0 {
			log.Info("The ring changed: handing objects over", "shards", ring.Shards(), "objects", moving)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// holds tells whether this shard reconciles o now. It does not when o was
// handed over at this version (the cache is behind), or when o belongs
// to another live shard: then the worker, which is the only one that
// could be reconciling o, hands it over, and reports held false.
func (c *kindController) holds(ctx context.Context, key cache.ObjectName, o metav1.Object) (bool, reconcile.Result, error) {
	id := c.sharding.ID
	log := klog.FromContext(ctx)
	if l := o.GetLabels()[shard.ShardLabel]; l != id {
		log.V(1).Info("Not this shard's: left alone", "object", key.String(), "shard", l)
		return false, reconcile.Result{}, nil
	}
	if c.shards.handedOver(key, o.GetResourceVersion()) {
		log.V(1).Info("Handed over at this version: left alone", "object", key.String(), "resourceVersion", o.GetResourceVersion())
		return false, reconcile.Result{}, nil
	}
	ring, _ := c.sharding.Members.Ring()
	act := shard.Decide(c.ringObject(o), ring, ring.Has, id)
	switch act.Verb {
	case shard.Keep:
		return true, reconcile.Result{}, nil
	case shard.Assign:
		// This shard is not live in its own view of the ring (its
		// renewals are late to show): hold off rather than write, and
		// look again once the view has caught up.
		log.V(1).Info("This shard is not on the ring as this replica sees it: holding off", "object", key.String(), "shards", ring.Shards())
		return false, reconcile.Result{RequeueAfter: time.Second}, nil
	}
	// The children first: once the object's label moves, its new holder
	// must find every child it may prune in its own watch.
	res, err := c.shardResource()
	if err == nil {
		err = c.children.moveChildren(ctx, c.client, o.GetUID(), act.To)
	}
	if err == nil {
		err = shard.HandOverTo(ctx, res, o, act.To)
	}
	switch {
	case err == nil:
		c.shards.remember(key, o.GetResourceVersion(), c.objectStore())
		c.stats.Add(func(s *reconcile.Stats) *atomic.Int64 { return &s.HandedOver })
		log.V(1).Info("Handed over", "object", key.String(), "to", act.To)
		return false, reconcile.Result{}, nil
	case apierrors.IsNotFound(err):
		return false, reconcile.Result{}, nil
	default:
		err = fmt.Errorf("hand %s over to shard %s: %w", key, act.To, err)
		if m, ok := requeue.Of(err); ok && m.Terminal {
			// Marked by the door as a child's apply would be (a Forbidden:
			// the account may not patch its objects): not retried with
			// backoff, tried again after the mark's delay. No reconcile
			// ran to report it on the object: the log says it.
			log.Error(err, "Cannot hand the object over", "object", key.String(), "to", act.To)
			return false, reconcile.Result{}, &reconcile.TerminalError{Err: err, RetryAfter: m.After}
		}
		// A Conflict too: the object changed since the cache saw it; the
		// retry reads it again and decides again.
		return false, reconcile.Result{}, err
	}
}

// objectStore is the cache of the kind's objects; an empty one before the
// kind's watch started.
func (c *kindController) objectStore() cache.Store {
	c.mu.Lock()
	h := c.watch
	c.mu.Unlock()
	if h == nil {
		return cache.NewStore(cache.MetaNamespaceKeyFunc)
	}
	return h.informer().GetStore()
}

// errNotWatched: the kind's watch has not started.
var errNotWatched = errors.New("the kind's objects are not watched yet")

// shardResource is the kind's objects' metadata as the sharder and the
// hand-overs read and write them: through the kind's client (its account
// may list and patch its objects, for their watch and their finalizers),
// in the namespace the operator watches, selected by the kind's folder.
func (c *kindController) shardResource() (shard.Resource, error) {
	c.mu.Lock()
	h := c.watch
	c.mu.Unlock()
	if h == nil {
		return nil, errNotWatched
	}
	return shard.MetadataResource(c.client, h.key.gvr, c.namespace, c.kind.ObjectSelector()), nil
}

// runSharder runs the kind's sharder once this replica is elected the
// ring's, until the kind stops.
func (c *kindController) runSharder(ctx context.Context, mapping *meta.RESTMapping) {
	select {
	case <-ctx.Done():
		return
	case <-c.sharding.Sharder:
	}
	log := klog.FromContext(ctx)
	res, err := c.shardResource()
	if err != nil {
		log.Error(err, "Cannot run the kind's sharder")
		return
	}
	gvk := c.kind.GVK
	s := shard.NewSharder(res, c.sharding.Members, gvk.Group, gvk.Kind).WithChildren(&kindChildren{c: c})
	c.shards.sharder.Store(s)
	log.Info("Assigning the kind's objects to shards", "resource", mapping.Resource.String())
	if err := s.Run(ctx); err != nil && ctx.Err() == nil {
		log.Error(err, "The kind's sharder stopped")
	}
}

// SharderStats returns the counters of kind gk's sharder, false when this
// replica does not run one.
func (m *Manager) SharderStats(gk schema.GroupKind) (shard.Stats, bool) {
	m.mu.Lock()
	kc := m.kinds[gk]
	m.mu.Unlock()
	if kc == nil {
		return shard.Stats{}, false
	}
	s := kc.shards.sharder.Load()
	if s == nil {
		return shard.Stats{}, false
	}
	return s.Stats(), true
}

// Shard is this replica's shard, "" when it is not sharded.
func (m *Manager) Shard() string { return m.opts.shardID() }

// kindChildren are a kind's children as its sharder moves them: in the
// resources the inventory records for the kind, through the kind's client
// (its account lists and patches its children, to apply and prune them).
type kindChildren struct{ c *kindController }

var _ shard.Children = (*kindChildren)(nil)

// Resources implements shard.Children.
func (k *kindChildren) Resources(ctx context.Context) ([]shard.Resource, error) {
	c := k.c
	gks, err := c.reconciler.Inventory.ChildKinds(ctx, c.kind.GVK.GroupKind())
	if err != nil {
		return nil, err
	}
	out := make([]shard.Resource, 0, len(gks))
	for _, gk := range gks {
		m, err := c.client.PreferredKind(gk)
		if err != nil {
			// Not served any more: nothing of it to move.
			continue
		}
		ns := c.namespace
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			ns = ""
		}
		out = append(out, shard.MetadataResource(c.client, m.Resource, ns, ownership.ManagedSelector(c.reconciler.Manager)))
	}
	return out, nil
}

// Parent implements shard.Children.
func (k *kindChildren) Parent(child *metav1.PartialObjectMetadata) (string, string, bool) {
	p, err := ownership.ParseParent(child.Annotations[ownership.AnnotationParent])
	if err != nil || p.GroupKind != k.c.kind.GVK.GroupKind() {
		return "", "", false
	}
	return p.Namespace, p.Name, true
}
