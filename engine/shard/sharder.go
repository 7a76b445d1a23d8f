package shard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// sharderWorkers is how many new objects the sharder labels at once, and
// moveWriters how many label writes it has in flight when a shard dies.
// The writes are small and independent; one at a time, a round trip each,
// the sharder labelled about 60 objects a second on the test plane, so
// that 3,000 new objects waited half a minute for their shard and a dead
// shard's 1,000 objects and children took 26 s to move, past the lease
// duration + 5 s the move must fit in. The API server's Priority and
// Fairness shares its capacity with the shards' own work: with 16 in
// flight, the new holders' reconciles, which start with the first
// relabel, took most of it, and the last of 1,000 relabels came 9.5 s
// after the first; with 64, 4.8-5.3 s (test/sharding, SIGKILL step).
// More in flight than that does not make the server take more writes a
// second (the step's limit is as fast with 16 as with 64).
const (
	sharderWorkers = 8
	moveWriters    = 64
)

// resyncLeases is how many lease durations apart the sharder looks for
// objects and children of dead shards when nothing prompts it: the last
// net under whatever a view of the ring out of step left behind.
const resyncLeases = 4

// listPage is the page size of the sharder's list of a dead shard's
// objects, so that a shard of 10,000 objects is not one response.
const listPage = 500

// Stats are the sharder's counters since it started, exported as the
// operator_sharder_* metrics.
type Stats struct {
	// Assigned: unassigned objects labelled with a shard.
	Assigned uint64
	// Reassigned: objects of dead shards labelled with a live one.
	Reassigned uint64
	// Conflicts: label writes refused because the object had changed
	// since it was read; each is read and decided again.
	Conflicts uint64
	// ChildrenMoved: children of dead shards labelled with the shard of
	// their parent.
	ChildrenMoved uint64
}

// Sharder is the elected sharder's loop over the objects of one kind: it
// labels the unassigned ones with their owner on the ring, and moves the
// objects of dead shards to live ones. Objects held by a live shard are
// never its to write: their holder hands them over (HandOver).
type Sharder struct {
	res         Resource
	members     *Members
	group, kind string
	retry       time.Duration // between passes while a shard is not yet confirmed dead
	resync      time.Duration // between passes when nothing prompts one
	settle      time.Duration // passes every retry period this long after a shard left

	queue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	store cache.Store // the unassigned objects, set by Run

	// children, when set, are the kind's children: those a dead shard
	// applied move with their parents (see WithChildren).
	children Children

	// labelled holds the version of each object this sharder labelled
	// that the watch has not yet taken out of store: a pass over store
	// in that window (a ring change) must not write it a second time,
	// which would only come back as a Conflict.
	labelledMu sync.Mutex
	labelled   map[cache.ObjectName]string

	assigned, reassigned, conflicts, childrenMoved atomic.Uint64
}

// NewSharder is the sharder of the objects of res, of kind in group, over
// the ring members watches (started). Run runs it.
func NewSharder(res Resource, members *Members, group, kind string) *Sharder {
	return &Sharder{
		res: res, members: members, group: group, kind: kind,
		retry:    members.cfg.RetryPeriod,
		resync:   resyncLeases * members.cfg.LeaseDuration,
		settle:   2 * members.cfg.LeaseDuration,
		labelled: map[cache.ObjectName]string{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "sharder-" + kind}),
	}
}

// Children are a sharded kind's children as the sharder sees them. A
// replica watches only the children labelled with its shard (HeldByLabel),
// so that a dead shard's children must move with its objects: or their new
// holder would never see the ones it no longer renders, to prune them.
type Children interface {
	// Resources are where the kind's children live, one Resource per
	// resource, each confined to the operator's children.
	Resources(ctx context.Context) ([]Resource, error)
	// Parent names the object of the kind child belongs to; false when
	// it is another kind's child.
	Parent(child *metav1.PartialObjectMetadata) (namespace, name string, ok bool)
}

// WithChildren makes the sharder move a dead shard's children of the kind
// to the shards its objects go to. Call it before Run.
func (s *Sharder) WithChildren(c Children) *Sharder {
	s.children = c
	return s
}

// Stats is a snapshot of the counters.
func (s *Sharder) Stats() Stats {
	return Stats{Assigned: s.assigned.Load(), Reassigned: s.reassigned.Load(), Conflicts: s.conflicts.Load(), ChildrenMoved: s.childrenMoved.Load()}
}

// Run assigns until ctx ends (the sharder's election lost, or the process
// stopping), then returns once its workers stopped. Call it once: the
// queue is shut down on return.
//
// New objects come through a watch of the unassigned ones only (the label
// absent): the sharder holds none of the assigned objects in memory, and
// an object leaves its cache as soon as it is labelled. The objects of
// dead shards are listed, not watched, once per change of the ring: they
// only appear when a shard leaves.
func (s *Sharder) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("group", s.group, "kind", s.kind)
	ctx = klog.NewContext(ctx, log)
	defer s.queue.ShutDown()

	unassigned := "!" + ShardLabel
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = unassigned
			l, err := s.res.List(ctx, o)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = unassigned
			return s.res.Watch(ctx, o)
		},
	}, s.res)
	inf := cache.NewSharedIndexInformerWithOptions(lw, &metav1.PartialObjectMetadata{}, cache.SharedIndexInformerOptions{})
	// A burst of creations waits here for its labels: keep of each object
	// only what Decide and the patch read, not its managedFields and
	// annotations (several times the rest).
	if err := inf.SetTransform(decisionStub); err != nil {
		return fmt.Errorf("sharder of %s: %w", s.kind, err)
	}
	// Handlers only enqueue: the worker reads the object from the cache.
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.enqueue,
		UpdateFunc: func(_, obj any) { s.enqueue(obj) },
		DeleteFunc: s.forget,
	}); err != nil {
		return fmt.Errorf("sharder of %s: watch unassigned objects: %w", s.kind, err)
	}
	s.store = inf.GetStore()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("sharder of %s: list unassigned objects: %w", s.kind, context.Cause(ctx))
	}

	var wg sync.WaitGroup
	for range sharderWorkers {
		wg.Go(func() { wait.UntilWithContext(ctx, s.work, time.Second) })
	}
	log.Info("Sharder running", "unassigned", len(s.store.ListKeys()))
	s.rebalance(ctx)
	s.queue.ShutDown()
	wg.Wait()
	return nil
}

// decisionStub keeps of an object's metadata what the sharder reads: its
// name, resourceVersion, labels and deletionTimestamp.
func decisionStub(obj any) (any, error) {
	p, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: p.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
		Labels: p.Labels, DeletionTimestamp: p.DeletionTimestamp,
	}}, nil
}

func (s *Sharder) enqueue(obj any) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	s.queue.Add(cache.MetaObjectToName(m))
}

// forget drops what the sharder remembers of an object that left its
// cache: labelled (by it or another) or deleted.
func (s *Sharder) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	s.labelledMu.Lock()
	delete(s.labelled, cache.MetaObjectToName(m))
	s.labelledMu.Unlock()
}

// alreadyLabelled reports whether o, at its version, was labelled by this
// sharder.
func (s *Sharder) alreadyLabelled(key cache.ObjectName, o *metav1.PartialObjectMetadata) bool {
	s.labelledMu.Lock()
	defer s.labelledMu.Unlock()
	return s.labelled[key] == o.ResourceVersion
}

// remember records that o was labelled at its version, unless the watch
// has already taken it out of the cache: its deletion is handled (forget)
// only after the store changed, so an entry made here is always dropped.
func (s *Sharder) remember(key cache.ObjectName, o *metav1.PartialObjectMetadata) {
	s.labelledMu.Lock()
	defer s.labelledMu.Unlock()
	if cur, ok, _ := s.store.GetByKey(key.String()); ok {
		if m, isMeta := cur.(*metav1.PartialObjectMetadata); isMeta && m.ResourceVersion == o.ResourceVersion {
			s.labelled[key] = o.ResourceVersion
		}
	}
}

// rebalance runs a pass at the start and at every change of the ring:
// unassigned objects waiting for a live shard are queued again, and the
// objects of shards that left are moved once those are confirmed dead.
// While a shard is not yet confirmed, or a write failed, the pass is run
// again every retry period: a shard's death is not a change of the ring.
//
// Passes also come again every retry period for two lease durations after
// a shard left (or after the start: shards may have left just before this
// sharder was elected), and every resync period besides. A replica hands objects
// over by its own view of the ring, which may still show the dead shard
// for a moment after this one's stopped showing it (their watches are not
// in step, and a hand-over in flight writes after its decision): what it
// hands to the dead shard then would stay there, with nobody to move it,
// until the next change of the ring.
func (s *Sharder) rebalance(ctx context.Context) {
	var prev []string
	settling := time.Now().Add(s.settle) // passes come every retry period until then
	for {
		ring, changed := s.members.Ring()
		if slices.ContainsFunc(prev, func(id string) bool { return !ring.Has(id) }) {
			settling = time.Now().Add(s.settle)
		}
		prev = ring.Shards()
		for _, key := range s.store.ListKeys() {
			if name, err := cache.ParseObjectName(key); err == nil {
				s.queue.Add(name)
			}
		}
		// Both passes, whatever the first one says. The children first:
		// their parents' new holders then find them in their watch, and
		// need neither a read nor a write of their own for them.
		children := s.reassignChildren(ctx, ring)
		wait := s.resync
		if s.reassign(ctx, ring) || children || time.Now().Before(settling) {
			wait = s.retry
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// reassign moves the objects of the shards not on ring to their owners on
// ring, each shard's once Members.Dead confirmed it (one read per shard).
// It reports whether a pass must come again: a shard not confirmed yet,
// or a read or a write that failed.
func (s *Sharder) reassign(ctx context.Context, ring *Ring) (again bool) {
	log := klog.FromContext(ctx)
	live := ring.Shards()
	if len(live) == 0 {
		return false // nowhere to move to: the next ring will have a shard
	}
	// Only the objects of shards not live: those of live shards are
	// their holders'.
	selector := ShardLabel + "," + ShardLabel + " notin (" + strings.Join(live, ",") + ")"
	byShard := map[string][]*metav1.PartialObjectMetadata{}
	opts := metav1.ListOptions{LabelSelector: selector, Limit: listPage}
	for {
		l, err := s.res.List(ctx, opts)
		if err != nil {
			log.Error(err, "Cannot list the objects of dead shards", "selector", selector)
			return true
		}
		for i := range l.Items {
			o := &l.Items[i]
			byShard[o.Labels[ShardLabel]] = append(byShard[o.Labels[ShardLabel]], o)
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			break
		}
	}
	ids := make([]string, 0, len(byShard))
	for id := range byShard {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		dead, err := s.members.Dead(ctx, id)
		if err != nil {
			log.Error(err, "Cannot confirm a shard dead", "shard", id)
			again = true
			continue
		}
		if !dead {
			// Left the ring (its Lease vanished, or this process's
			// view expired it) but may still be working.
			log.V(2).Info("Shard left the ring, not confirmed dead yet", "shard", id, "objects", len(byShard[id]))
			again = true
			continue
		}
		// Dead may have refreshed the ring: decide on the newest.
		cur, _ := s.members.Ring()
		var moved atomic.Int64
		if writeAll(byShard[id], func(o *metav1.PartialObjectMetadata) (again bool) {
			act := Decide(s.object(o), cur, cur.Has, "")
			if act.Verb != Assign {
				return cur.Len() == 0
			}
			switch err := s.assign(ctx, o, act.To); {
			case err == nil:
				s.reassigned.Add(1)
				moved.Add(1)
			case apierrors.IsConflict(err):
				// Changed since the list: the next pass reads it again.
				s.conflicts.Add(1)
				return true
			case apierrors.IsNotFound(err):
			default:
				log.Error(err, "Cannot reassign an object of a dead shard", "object", klog.KRef(o.Namespace, o.Name), "from", id, "to", act.To)
				return true
			}
			return false
		}) {
			again = true
		}
		log.Info("Reassigned the objects of a dead shard", "shard", id, "objects", moved.Load(), "of", len(byShard[id]))
	}
	return again
}

// reassignChildren moves the children of the shards not on ring to the
// shards their parents belong to (the parents' owners on ring, where
// reassign moves them), each shard's once Members.Dead confirmed it. It
// reports whether a pass must come again, as reassign does.
func (s *Sharder) reassignChildren(ctx context.Context, ring *Ring) (again bool) {
	live := ring.Shards()
	if s.children == nil || len(live) == 0 {
		return false
	}
	log := klog.FromContext(ctx)
	resources, err := s.children.Resources(ctx)
	if err != nil {
		log.Error(err, "Cannot list where the kind's children live")
		return true
	}
	selector := HeldByLabel + "," + HeldByLabel + " notin (" + strings.Join(live, ",") + ")"
	dead := map[string]bool{}
	isDead := func(id string) bool {
		d, ok := dead[id]
		if !ok {
			var err error
			if d, err = s.members.Dead(ctx, id); err != nil {
				log.Error(err, "Cannot confirm a shard dead", "shard", id)
			}
			dead[id] = d
		}
		return d
	}
	// A child to move, and where to.
	type move struct {
		res Resource
		obj *metav1.PartialObjectMetadata
		to  string
	}
	var moves []move
	for _, res := range resources {
		opts := metav1.ListOptions{LabelSelector: selector, Limit: listPage}
		for {
			l, err := res.List(ctx, opts)
			if err != nil {
				log.Error(err, "Cannot list the children of dead shards", "selector", selector)
				again = true
				break
			}
			for i := range l.Items {
				o := &l.Items[i]
				ns, name, ok := s.children.Parent(o)
				if !ok {
					continue
				}
				if !isDead(o.Labels[HeldByLabel]) {
					again = true
					continue
				}
				moves = append(moves, move{res: res, obj: o, to: ring.Owner(Key(s.group, s.kind, ns, name))})
			}
			if opts.Continue = l.Continue; opts.Continue == "" {
				break
			}
		}
	}
	var moved atomic.Int64
	if writeAll(moves, func(m move) (again bool) {
		patch, err := HeldByPatch(m.to, m.obj.ResourceVersion)
		if err == nil {
			err = m.res.Patch(ctx, m.obj.Namespace, m.obj.Name, patch)
		}
		switch {
		case err == nil:
			moved.Add(1)
		case apierrors.IsNotFound(err):
		default:
			// A Conflict too: read again on the next pass.
			log.V(1).Info("Cannot move a child of a dead shard", "child", klog.KRef(m.obj.Namespace, m.obj.Name), "to", m.to, "err", err.Error())
			return true
		}
		return false
	}) {
		again = true
	}
	if n := moved.Load(); n > 0 {
		s.childrenMoved.Add(uint64(n))
		log.Info("Moved the children of dead shards with their parents", "children", n)
	}
	return again
}

// writeAll calls write for every item, moveWriters at a time, and reports
// whether any asked for another pass.
func writeAll[T any](items []T, write func(T) (again bool)) bool {
	var again atomic.Bool
	var wg sync.WaitGroup
	sem := make(chan struct{}, moveWriters)
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if write(it) {
				again.Store(true)
			}
		})
	}
	wg.Wait()
	return again.Load()
}

// work labels queued unassigned objects until the queue shuts down.
func (s *Sharder) work(ctx context.Context) {
	for s.next(ctx) {
	}
}

func (s *Sharder) next(ctx context.Context) bool {
	key, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(key)
	if err := s.assignNew(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot assign an object", "object", key)
		s.queue.AddRateLimited(key)
		return true
	}
	s.queue.Forget(key)
	return true
}

// assignNew labels the unassigned object key with its owner. Not in the
// cache: assigned or deleted since it was queued. No live owner: the next
// ring queues it again. A Conflict or NotFound is no failure: the informer
// delivers the newer version (queued again if it is still unassigned) or
// the deletion.
func (s *Sharder) assignNew(ctx context.Context, key cache.ObjectName) error {
	obj, ok, err := s.store.GetByKey(key.String())
	if err != nil || !ok {
		return nil
	}
	o, isMeta := obj.(*metav1.PartialObjectMetadata)
	if !isMeta || s.alreadyLabelled(key, o) {
		return nil
	}
	ring, _ := s.members.Ring()
	act := Decide(s.object(o), ring, ring.Has, "")
	if act.Verb != Assign {
		return nil
	}
	switch err := s.assign(ctx, o, act.To); {
	case err == nil:
		s.assigned.Add(1)
		s.remember(key, o)
		klog.FromContext(ctx).V(4).Info("Assigned", "object", klog.KRef(o.Namespace, o.Name), "shard", act.To)
		return nil
	case apierrors.IsConflict(err):
		s.conflicts.Add(1)
		klog.FromContext(ctx).V(4).Info("Object changed before it was assigned; waiting for the newer version", "object", klog.KRef(o.Namespace, o.Name))
		return nil
	case apierrors.IsNotFound(err):
		return nil
	default:
		return err
	}
}

// assign writes o's label for shard to, on the condition that o is still
// the version read.
func (s *Sharder) assign(ctx context.Context, o *metav1.PartialObjectMetadata, to string) error {
	patch, err := AssignPatch(to, o.ResourceVersion)
	if err != nil {
		return fmt.Errorf("assign %s to shard %s: %w", objectName(o.Namespace, o.Name), to, err)
	}
	if err := s.res.Patch(ctx, o.Namespace, o.Name, patch); err != nil {
		return fmt.Errorf("assign %s to shard %s: %w", objectName(o.Namespace, o.Name), to, err)
	}
	return nil
}

// object is what Decide needs of o.
func (s *Sharder) object(o *metav1.PartialObjectMetadata) Object {
	return Object{Key: Key(s.group, s.kind, o.Namespace, o.Name), Shard: o.Labels[ShardLabel], Deleting: o.DeletionTimestamp != nil}
}
