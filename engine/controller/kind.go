package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/revision"
)

// kindController serves one kind: informer -> queue -> workers.
type kindController struct {
	children *childWatches
	kind     *catalog.Kind
	// identity is who the kind's calls are made as (client's), and
	// accessChecked whether the API server said it may watch the kind
	// (false while the kind was not served: asked again at each sync).
	identity      identity
	accessChecked bool
	client        *kube.Client
	namespace     string
	watches       *watchSet
	lookups       *lookupWatches
	leading       <-chan struct{} // closed once this replica may write
	reconciler    *reconcile.Reconciler
	stats         *reconcile.Stats
	minRequeue    time.Duration
	drainTimeout  time.Duration
	// sharding is the ring this replica is a shard of; nil: not sharded.
	sharding *Sharding
	shards   shardState
	// writes are the reconciler's own writes of the kind's objects that
	// the watch has not shown yet (ownwrites.go), the Manager's for the
	// kind, so that a restart of the kind keeps them.
	writes *ownWrites
	// mapping is the kind's resource, set before the workers start.
	mapping *meta.RESTMapping
	// revisions keep the kind's folder versions (revisions.go); nil: none.
	revisions *revision.Store
	// staged serves a kind that rolls out in steps (rollout.go); nil: all
	// at once.
	staged *staged
	// base is the operator's own client: the revision records and the
	// rollout kept on them are the operator's, whatever the kind's
	// identity.
	base *kube.Client
	// newReconciler makes a reconciler of the kind for another revision
	// of its folder, as the kind's own is made, as that revision's
	// identity.
	newReconciler func(ctx context.Context, k *catalog.Kind) (*reconcile.Reconciler, error)

	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// watch is the kind's objects' watch, once the API server serves the
	// kind; the kind holds it until it stops. watchSince is when it was
	// acquired.
	watch      *watchHandle
	watchSince time.Time
}

func (c *kindController) stop() {
	c.cancel()
	<-c.done
}

func (c *kindController) enqueue(key cache.ObjectName) {
	c.mu.Lock()
	q := c.queue
	c.mu.Unlock()
	if q != nil {
		q.Add(key)
	}
}

// synced reports whether the kind's watch has listed its objects; false
// too while the API server does not serve the kind.
func (c *kindController) synced() (served, synced bool) {
	c.mu.Lock()
	h := c.watch
	c.mu.Unlock()
	return h != nil, h != nil && h.hasSynced()
}

// parents is the view of the kind's objects that the admission of
// children reads; false while the API server does not serve the kind, when
// no object of it can exist.
func (c *kindController) parents() (parentView, bool) {
	c.mu.Lock()
	h, since := c.watch, c.watchSince
	c.mu.Unlock()
	if h == nil {
		return parentView{}, false
	}
	inf := h.informer()
	return parentView{store: inf.GetStore(), synced: inf.HasSynced, listBy: since.Add(syncTimeout),
		outside: c.kind.Spec.AllowClusterScoped}, true
}

// run serves the kind until ctx is done.
func (c *kindController) run(ctx context.Context) {
	defer close(c.done)
	log := klog.FromContext(ctx)
	// A kind whose CRD is not installed yet waits for it; the mapper's
	// discovery is reset on every miss, so installing the CRD is enough.
	start := time.Now()
	mapping := waitForMapping(ctx, c)
	if mapping == nil {
		return
	}
	c.mapping = mapping
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: c.kind.GVK.GroupKind().String()})
	selector := c.selector()
	watch := c.watches.acquire(c.client, watchKey{gvr: mapping.Resource, namespace: c.namespace, selector: selector}, nil, c.handler(queue))
	c.mu.Lock()
	c.queue, c.watch, c.watchSince = queue, watch, time.Now()
	c.mu.Unlock()

	// Workers start with the watch: objects are served as the initial list
	// streams in, not after the last of ten thousand has arrived. What
	// needs the whole list waits for it: the catch-up count and the sweep.
	caught := newCatchUp(log, start)
	go c.whenListed(ctx, mapping, watch, caught)
	if c.sharding != nil {
		go c.followRing(ctx, watch, queue)
		go c.runSharder(ctx, mapping)
	}

	// Workers get a context of their own, so that stopping lets in-flight
	// reconciles finish their writes (drain) instead of cutting them off.
	workCtx, cancelWork := context.WithCancel(withKind(klog.NewContext(context.Background(), log), c.kind.GVK.GroupKind()))
	defer cancelWork()
	served := c.whenServed(ctx, c.recordRevision(ctx, mapping))
	var wg sync.WaitGroup
	for range c.kind.Workers() {
		wg.Go(func() {
			if !c.lead(ctx) || !waitRecorded(ctx, served) {
				return
			}
			for c.processNext(workCtx, queue, caught) {
			}
		})
	}
	<-ctx.Done()
	watch.release()
	c.drain(log, queue, cancelWork)
	wg.Wait()
	log.Info("Stopped kind")
}

// handler enqueues the kind's objects that need a reconcile, lets go of
// the writes the watch now shows (ownWrites), and forgets what was kept of
// a deleted object.
func (c *kindController) handler(queue workqueue.TypedRateLimitingInterface[cache.ObjectName]) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(metav1.Object); ok {
				c.writes.seen(o)
			}
			c.add(queue, obj)
		},
		UpdateFunc: func(old, cur any) {
			// A status-only event (our own write's, mostly) reconciles
			// nothing: a reconcile that ran before it read the write
			// already (ownWrites).
			o, ok1 := old.(*cached.Object)
			n, ok2 := cur.(*cached.Object)
			if ok2 {
				c.writes.seen(n)
			}
			if ok1 && ok2 && needsReconcile(o, n) {
				c.add(queue, cur)
			}
			if c.staged != nil {
				c.staged.poke() // a status moved: the rollout may move on
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(metav1.Object); ok {
				name := cache.MetaObjectToName(o)
				c.lookups.forget(parentRef{gk: c.kind.GVK.GroupKind(), name: name})
				c.writes.forget(o)
				c.shards.forget(name)
			}
		},
	}
}

// whenListed waits for the watch to list the kind's objects, then, once
// this replica leads, counts the catch-up and starts the sweep.
func (c *kindController) whenListed(ctx context.Context, mapping *meta.RESTMapping, watch *watchHandle, caught *catchUp) {
	log := klog.FromContext(ctx)
	for !waitSynced(ctx, watch.hasSynced) {
		if ctx.Err() != nil {
			return
		}
		log.Info("The kind's watch has not listed its objects yet; still waiting")
	}
	log.Info("Serving kind", "resource", mapping.Resource.String(), "workers", c.kind.Workers(), "selector", c.kind.ObjectSelector())
	if !c.lead(ctx) {
		return
	}
	objs := watch.informer().GetStore().List()
	names := make([]cache.ObjectName, 0, len(objs))
	for _, o := range objs {
		if m, ok := o.(metav1.Object); ok {
			names = append(names, cache.MetaObjectToName(m))
		}
	}
	caught.listed(names)
	if c.kind.Spec.AllowClusterScoped {
		c.sweep(ctx, mapping, watch.informer())
	}
}

// drain lets the queue's in-flight reconciles finish, at most
// drainTimeout, then cancels them.
func (c *kindController) drain(log klog.Logger, queue workqueue.TypedRateLimitingInterface[cache.ObjectName], cancelWork context.CancelFunc) {
	drained := make(chan struct{})
	go func() { queue.ShutDownWithDrain(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(c.drainTimeout):
		log.Info("Drain timed out; canceling in-flight reconciles")
		cancelWork()
		queue.ShutDown()
	}
}

// lead waits until this replica may write; false if ctx ended first.
func (c *kindController) lead(ctx context.Context) bool {
	select {
	case <-c.leading:
		return true
	case <-ctx.Done():
		return false
	}
}

// sweepInterval is how often a kind with children outside its objects'
// namespaces looks for such children whose parent is gone.
const sweepInterval = 5 * time.Minute

// sweep deletes, now and then every sweepInterval, the children outside
// the namespace whose parent no longer exists (see reconcile.Sweep).
func (c *kindController) sweep(ctx context.Context, m *meta.RESTMapping, informer cache.SharedIndexInformer) {
	log := klog.FromContext(ctx)
	exists := func(ctx context.Context, ns, name string) (types.UID, bool, error) {
		if o, ok, _ := informer.GetIndexer().GetByKey(objectKey(ns, name)); ok {
			return o.(*cached.Object).GetUID(), true, nil
		}
		live, err := c.client.Get(ctx, m, ns, name)
		if apierrors.IsNotFound(err) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		return live.GetUID(), true, nil
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if n, err := c.reconciler.Sweep(ctx, exists); err != nil {
			log.Error(err, "Looking for children whose parent is gone failed; will try again", "in", sweepInterval.String())
		} else if n > 0 {
			log.Info("Deleted children whose parent is gone", "count", n)
		}
	}, sweepInterval)
}

func waitForMapping(ctx context.Context, c *kindController) *meta.RESTMapping {
	log := klog.FromContext(ctx)
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 1 << 30, Cap: 30 * time.Second}
	for {
		m, err := c.client.Mapping(c.kind.GVK)
		if err == nil {
			return m
		}
		d := backoff.Step()
		log.Info("Waiting for the kind to be served by the API server (is its CRD installed?)", "err", err.Error(), "retryIn", d.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d):
		}
	}
}

func (c *kindController) add(q workqueue.TypedRateLimitingInterface[cache.ObjectName], obj any) {
	if name, err := cache.ObjectToName(obj); err == nil {
		q.Add(name)
	}
}

// needsReconcile is true for changes the templates can see or that the
// engine must act on, and false for status-only updates and for the
// engine's own marks on the parent: its own writes must not reconcile again.
func needsReconcile(old, cur metav1.Object) bool {
	return old.GetGeneration() != cur.GetGeneration() ||
		old.GetUID() != cur.GetUID() ||
		!equality.Semantic.DeepEqual(old.GetLabels(), cur.GetLabels()) ||
		!equality.Semantic.DeepEqual(withoutOwn(old.GetAnnotations()), withoutOwn(cur.GetAnnotations())) ||
		!equality.Semantic.DeepEqual(old.GetDeletionTimestamp(), cur.GetDeletionTimestamp()) ||
		(cur.GetDeletionTimestamp() != nil && !equality.Semantic.DeepEqual(old.GetFinalizers(), cur.GetFinalizers()))
}

func withoutOwn(ann map[string]string) map[string]string {
	if _, ok := ann[reconcile.AnnotationPruneHeld]; !ok {
		return ann
	}
	out := maps.Clone(ann)
	delete(out, reconcile.AnnotationPruneHeld)
	return out
}

func (c *kindController) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[cache.ObjectName], caught *catchUp) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	start := time.Now()
	res, err := c.reconcileKey(ctx, key)
	reconcile.ObserveReconcile(c.kind.GVK.GroupKind(), time.Since(start))
	c.handle(ctx, q, key, res, err)
	caught.done(key)
	return true
}

// reconcileKey loads the object from the cache and reconciles a copy. A
// panic is recovered into an error: one object never crashes the operator.
func (c *kindController) reconcileKey(ctx context.Context, key cache.ObjectName) (res reconcile.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.stats.Add(func(s *reconcile.Stats) *atomic.Int64 { return &s.PanicsHandled })
			err = fmt.Errorf("panic while reconciling %s: %v", key, r)
		}
	}()
	obj, exists, err := c.watch.informer().GetIndexer().GetByKey(key.String())
	if err != nil {
		return res, fmt.Errorf("get %s from cache: %w", key, err)
	}
	if !exists {
		return res, nil // deleted: garbage collection takes its children
	}
	if c.sharding != nil {
		if held, res, err := c.holds(ctx, key, obj.(*cached.Object)); !held {
			return res, err
		}
	}
	u, err := c.load(ctx, key, obj.(*cached.Object))
	if err != nil || u == nil {
		return res, err
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("namespace", key.Namespace, "name", key.Name))
	r, err := c.reconcilerFor(ctx, u)
	if err != nil {
		// Reported on the object by the folder's reconciler, which has the
		// kind's client and recorder: the object's condition and Event say
		// why it is not reconciled, and its children stay as they are.
		return res, c.reconciler.RevisionUnavailable(ctx, u, fmt.Errorf("the revision the kind's rollout gives it: %w", err))
	}
	return r.Reconcile(ctx, u)
}

// load is the object to reconcile: the watch's, or the reconciler's own
// last write of it while the watch has not shown that write yet; after a
// write whose outcome is unknown, the API server's (ownWrites). nil: the
// object is gone.
func (c *kindController) load(ctx context.Context, key cache.ObjectName, watched *cached.Object) (*unstructured.Unstructured, error) {
	from, written := c.writes.newest(key, watched)
	switch from {
	case fromWritten:
		return written.Object()
	case fromServer:
		live, err := c.client.Get(ctx, c.mapping, key.Namespace, key.Name)
		if apierrors.IsNotFound(err) {
			live, err = nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s, whose last write may or may not have been applied: %w", key, err)
		}
		c.writes.readLive(key, live, watched)
		return live, nil
	case nowhere:
		return nil, nil // its deletion's event is on its way
	}
	return watched.Object()
}

// handle is the one place that decides requeues.
func (c *kindController) handle(ctx context.Context, q workqueue.TypedRateLimitingInterface[cache.ObjectName], key cache.ObjectName, res reconcile.Result, err error) {
	var terminal *reconcile.TerminalError
	switch {
	case err == nil:
		q.Forget(key)
		if res.RequeueAfter > 0 {
			c.stats.Add(func(s *reconcile.Stats) *atomic.Int64 { return &s.Requeues })
			q.AddAfter(key, max(res.RequeueAfter, c.minRequeue))
		} else {
			c.stats.Add(func(s *reconcile.Stats) *atomic.Int64 { return &s.Succeeded })
		}
	case errors.As(err, &terminal):
		// Reported on the object; the next change of the object, of the
		// templates or of what it waits for reconciles it again.
		c.stats.Add(func(s *reconcile.Stats) *atomic.Int64 { return &s.Terminal })
		q.Forget(key)
		if terminal.RetryAfter > 0 {
			q.AddAfter(key, terminal.RetryAfter)
		}
	default:
		c.stats.Add(func(s *reconcile.Stats) *atomic.Int64 { return &s.RateLimited })
		klog.FromContext(ctx).V(1).Info("Reconcile will be retried", "key", key.String(), "err", err.Error())
		q.AddRateLimited(key)
	}
}
