package controller

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/kube"
)

// watchKey is one watch of the set: what it lists, and as whom. Two users
// with the same key share one informer; anything that changes what a
// watch sees (another namespace, selector or identity) is another watch.
type watchKey struct {
	gvr schema.GroupVersionResource
	// namespace is "" for all namespaces, and for cluster-scoped resources.
	namespace string
	// selector is the label selector sent to the API server.
	selector string
	// identity is who lists and watches ("" for the operator): a kind that
	// impersonates a ServiceAccount sees exactly what the account may
	// see, never through a cache the operator filled.
	identity string
	// metadata is a metadata-only watch (metav1.PartialObjectMetadata, cut
	// to what ownership reads); else the objects whole, compact
	// (cached.Object).
	metadata bool
	// children is the watch of the operator's own children: each object
	// is kept whole or as a stub as watchSet.admit judges (admission.go).
	children bool
}

// watchSet is the one set of informers of a Manager: the parents of every
// kind, the children, the lookups and the ConfigMap folders. Each informer
// is counted: acquire starts it, or shares the one running; release stops
// it when its last user has released it. All stop when ctx is done.
// (metacontroller's shared, reference-counted dynamic informers.)
//
// Two informers of a sharded replica are not in the set, on purpose
// (engine/shard):
//   - the ring's Leases (shard.Members): typed Leases through the
//     coordination client, a side door of kube.Client (its doc says why),
//     started before the Manager and living until the shard's Lease is
//     released after the drain, past the set's ctx;
//   - the elected sharder's watch of a kind's unassigned objects
//     (shard.Sharder): it lists and watches through the kind's door, but
//     nothing would share it (its selector, the kind's and "no shard
//     label", is no other watch's), it keeps its own stub of each object
//     (the decision's fields, not an ownership stub), and it lives exactly
//     as long as the sharder's Run, which stops it.
type watchSet struct {
	ctx context.Context
	// admit is the transform of the children's watches (watchKey.children).
	admit cache.TransformFunc
	mu    sync.Mutex
	by    map[watchKey]*sharedWatch
}

func newWatchSet(ctx context.Context) *watchSet {
	return &watchSet{ctx: ctx, by: map[watchKey]*sharedWatch{}}
}

// sharedWatch is one informer and how many users hold it.
type sharedWatch struct {
	inf    cache.SharedIndexInformer
	cancel context.CancelFunc
	users  int
}

// watchHandle is one user's hold on a watch, and its event handler.
type watchHandle struct {
	set  *watchSet
	key  watchKey
	w    *sharedWatch
	reg  cache.ResourceEventHandlerRegistration // nil: no handler
	once sync.Once
}

// acquire holds the watch of key as client's identity (key.identity is
// set from client), started if no one holds it yet, with indexers added if
// missing. h, when not nil, receives the watch's events from now on,
// starting with an add of every object already listed.
func (s *watchSet) acquire(client *kube.Client, key watchKey, indexers cache.Indexers, h cache.ResourceEventHandler) *watchHandle {
	key.identity = client.Identity()
	s.mu.Lock()
	w, ok := s.by[key]
	if !ok {
		w = s.start(client, key)
		s.by[key] = w
	}
	w.users++
	addIndexers(w.inf, indexers)
	s.mu.Unlock()
	wh := &watchHandle{set: s, key: key, w: w}
	if h != nil {
		// Not under s.mu: a handler added to a running informer is sent
		// the objects it holds.
		wh.reg, _ = w.inf.AddEventHandler(h)
	}
	return wh
}

// start runs a new informer of key until its last user releases it. No
// resync: every change comes as an event, and a periodic replay of every
// object would cost a reconcile of each.
func (s *watchSet) start(client *kube.Client, key watchKey) *sharedWatch {
	ctx, cancel := context.WithCancel(s.ctx)
	var inf cache.SharedIndexInformer
	if key.metadata {
		inf = cache.NewSharedIndexInformer(client.MetadataListWatch(key.gvr, key.namespace, key.selector),
			&metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
		_ = inf.SetTransform(ownershipStub)
	} else {
		inf = cache.NewSharedIndexInformer(client.ListWatch(key.gvr, key.namespace, key.selector),
			&cached.Object{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		if key.children && s.admit != nil {
			_ = inf.SetTransform(s.admit)
		}
	}
	go inf.Run(ctx.Done())
	return &sharedWatch{inf: inf, cancel: cancel}
}

// addIndexers adds to inf those of indexers it lacks; an informer that
// runs already indexes what it holds.
func addIndexers(inf cache.SharedIndexInformer, indexers cache.Indexers) {
	have := inf.GetIndexer().GetIndexers()
	missing := cache.Indexers{}
	for name, f := range indexers {
		if _, ok := have[name]; !ok {
			missing[name] = f
		}
	}
	if len(missing) > 0 {
		_ = inf.AddIndexers(missing)
	}
}

// informer is the watch's informer: read its cache, never Run it.
func (h *watchHandle) informer() cache.SharedIndexInformer { return h.w.inf }

// hasSynced reports whether the watch has listed its objects and, with a
// handler, whether the handler has been sent them all.
func (h *watchHandle) hasSynced() bool {
	if h.reg != nil {
		return h.reg.HasSynced()
	}
	return h.w.inf.HasSynced()
}

// release removes the handler and lets go of the watch, which stops when
// no user holds it any more. Releasing twice is releasing once.
func (h *watchHandle) release() {
	h.once.Do(func() {
		if h.reg != nil {
			_ = h.w.inf.RemoveEventHandler(h.reg)
		}
		s := h.set
		s.mu.Lock()
		defer s.mu.Unlock()
		h.w.users--
		if h.w.users > 0 {
			return
		}
		h.w.cancel()
		if s.by[h.key] == h.w {
			delete(s.by, h.key)
		}
	})
}

// size is the number of running watches.
func (s *watchSet) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.by)
}
