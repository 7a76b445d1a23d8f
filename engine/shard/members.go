package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Members is one process's view of a ring's shards: the Leases labelled
// with the ring in its namespace, watched. Its methods are safe for
// concurrent use once Start has returned.
type Members struct {
	cfg Config
	// client is asked, as client-go's informers ask a clientset, whether
	// it serves watch-list (fakes do not).
	client coordinationv1.LeasesGetter
	leases coordinationv1.LeaseInterface
	clock  clock.Clock

	kick chan struct{} // wakes the expiry timer after an event

	mu      sync.Mutex
	started time.Time
	records map[string]*record // by shard id
	ring    *Ring              // of the live shards
	changed chan struct{}      // closed when ring is replaced
}

// record is what this process knows of one shard's Lease.
type record struct {
	holder string // spec.holderIdentity; "" once released
	renew  time.Time
	rv     string
	dur    time.Duration
	// seen is when this process saw the Lease last change, by its own
	// clock: the Lease is live until seen+dur.
	seen time.Time
	// written: this process saw this version written (a watch event
	// after its first list, or a change from a version it knew). A
	// version found in the first list may be the last renewal of a
	// shard killed long ago: counting it live for a duration would have
	// this replica hand objects over to a dead shard after the sharder
	// moved that shard's objects, where nobody would move them again.
	written bool
	// gone is when this process learned the Lease was deleted; zero
	// while it exists.
	gone time.Time
	// dead: confirmed by Dead or deleted by Collect as dead. A dead
	// holder does not come back on the same Lease version.
	dead bool
}

// live reports whether r is the live Lease of shard id at now.
func (r *record) live(id string, now time.Time) bool {
	return r.written && r.gone.IsZero() && r.holder == id && now.Before(r.seen.Add(r.dur))
}

// NewMembers is the view of cfg's ring through leases. Start runs it.
func NewMembers(leases coordinationv1.LeasesGetter, cfg Config) (*Members, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Members{
		cfg: cfg, client: leases, leases: leases.Leases(cfg.Namespace), clock: clock.RealClock{},
		kick: make(chan struct{}, 1), records: map[string]*record{},
		ring: NewRing(nil), changed: make(chan struct{}),
	}, nil
}

// Start watches the ring's Leases until ctx ends and returns once the
// first list is in.
func (m *Members) Start(ctx context.Context) error {
	m.mu.Lock()
	m.started = m.clock.Now()
	m.mu.Unlock()
	selector := RingLabel + "=" + m.cfg.Ring
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return m.leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return m.leases.Watch(ctx, o)
		},
	}, m.client)
	log := klog.FromContext(ctx).WithValues("ring", m.cfg.Ring, "namespace", m.cfg.Namespace)
	_, inf := cache.NewInformerWithOptions(cache.InformerOptions{
		Logger: &log, ListerWatcher: lw, ObjectType: &coordv1.Lease{},
		Handler: cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj any, inFirstList bool) { m.observe(obj, !inFirstList) },
			UpdateFunc: func(_, obj any) { m.observe(obj, true) },
			DeleteFunc: m.forget,
		},
	})
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("watch the leases of ring %s in %s: %w", m.cfg.Ring, m.cfg.Namespace, context.Cause(ctx))
	}
	go m.expire(ctx)
	m.mu.Lock()
	found := make([]string, 0, len(m.records))
	for id := range m.records {
		found = append(found, id)
	}
	m.mu.Unlock()
	slices.Sort(found)
	// None is live yet: each joins the ring at its next renewal.
	log.Info("Watching the ring's shards", "leases", found)
	return nil
}

// Ring is the ring of the shards live now (seen renewing within their
// lease duration: a shard found in the first list joins at its next
// renewal), and a channel closed when that set changes (a shard joins,
// leaves, or its Lease expires). The ring is built once per change and
// shared by every caller (it is immutable).
func (m *Members) Ring() (*Ring, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refreshLocked(m.clock.Now())
	return m.ring, m.changed
}

// observe records an added or updated Lease. A change of holder, renewTime
// or resourceVersion is a renewal, seen now; written says the event is a
// write, not a Lease found in the first list.
func (m *Members) observe(obj any, written bool) {
	l, ok := obj.(*coordv1.Lease)
	if !ok {
		return
	}
	id, ok := idOf(m.cfg.Ring, l.Name)
	if !ok {
		return // not a shard's Lease, though labelled with the ring
	}
	m.mu.Lock()
	m.recordLocked(id, l, m.clock.Now(), written)
	m.refreshLocked(m.clock.Now())
	m.mu.Unlock()
	m.wake()
}

// forget records a deleted Lease.
func (m *Members) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	l, ok := obj.(*coordv1.Lease)
	if !ok {
		return
	}
	id, ok := idOf(m.cfg.Ring, l.Name)
	if !ok {
		return
	}
	m.mu.Lock()
	m.goneLocked(id, m.clock.Now())
	m.refreshLocked(m.clock.Now())
	m.mu.Unlock()
	m.wake()
}

// recordLocked records l as seen at now. A version other than the one
// recorded was written since this process saw that one; written says that
// l was seen being written even without an earlier version.
func (m *Members) recordLocked(id string, l *coordv1.Lease, now time.Time, written bool) *record {
	holder, renew := ptr.Deref(l.Spec.HolderIdentity, ""), renewTime(l)
	r := m.records[id]
	if r == nil || !r.gone.IsZero() || r.rv != l.ResourceVersion || r.holder != holder || !r.renew.Equal(renew) {
		r = &record{holder: holder, renew: renew, rv: l.ResourceVersion, seen: now, written: written || r != nil}
		m.records[id] = r
	}
	r.dur = leaseDuration(l, m.cfg.LeaseDuration)
	return r
}

func (m *Members) goneLocked(id string, now time.Time) *record {
	r := m.records[id]
	if r == nil {
		// Never seen: deleted before this process started watching,
		// perhaps while live. Counted as held and gone since the start.
		r = &record{holder: id, seen: m.started, dur: m.cfg.LeaseDuration, gone: m.started}
		m.records[id] = r
	}
	if r.gone.IsZero() {
		r.gone = now
	}
	return r
}

func (m *Members) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// refreshLocked recomputes the live set at now; when it changed, builds
// the new ring and closes the old one's channel. It returns when the next
// live Lease expires (zero when none is live).
func (m *Members) refreshLocked(now time.Time) time.Time {
	var live []string
	var next time.Time
	for id, r := range m.records {
		if !r.live(id, now) {
			// Tombstones are kept a while for Dead, then dropped.
			if !r.gone.IsZero() && now.Sub(r.gone) > 2*max(r.dur, m.cfg.LeaseDuration) {
				delete(m.records, id)
			}
			continue
		}
		live = append(live, id)
		if exp := r.seen.Add(r.dur); next.IsZero() || exp.Before(next) {
			next = exp
		}
	}
	slices.Sort(live)
	if !slices.Equal(live, m.ring.shards) {
		m.ring = NewRing(live)
		close(m.changed)
		m.changed = make(chan struct{})
	}
	return next
}

// expire wakes at the earliest expiry of a live Lease, so that a shard that
// stops renewing without a word leaves the ring on time.
func (m *Members) expire(ctx context.Context) {
	t := m.clock.NewTimer(time.Hour)
	defer t.Stop()
	for {
		m.mu.Lock()
		now := m.clock.Now()
		next := m.refreshLocked(now)
		m.mu.Unlock()
		wait := time.Hour // nothing live: an event will kick
		if !next.IsZero() {
			wait = next.Sub(now)
		}
		t.Stop()
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
		case <-t.C():
		}
	}
}

// Dead reports whether shard id has stopped for sure: the one check before
// its objects go to others. It reads the Lease from the API server (one
// GET; call it once per shard that left the ring, not per object), because
// the watch may be behind: dead is a Lease released by its holder, or one
// this process has seen unrenewed for its whole duration, or one deleted
// (by anyone) at least a lease duration ago. A Lease that vanished while
// live is not dead at once: its holder may still be working until its
// next renewal fails.
func (m *Members) Dead(ctx context.Context, id string) (bool, error) {
	l, err := m.leases.Get(ctx, LeaseName(m.cfg.Ring, id), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("confirm shard %s dead: read its lease: %w", id, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	var r *record
	if err == nil {
		r = m.recordLocked(id, l, now, false)
		r.dead = r.dead || r.holder == "" || !now.Before(r.seen.Add(r.dur))
	} else {
		r = m.goneLocked(id, now)
		r.dead = r.dead || r.holder == "" || !now.Before(r.gone.Add(max(r.dur, m.cfg.LeaseDuration)))
	}
	m.refreshLocked(now)
	return r.dead, nil
}

// Collect deletes the ring's Leases that are released, or dead for a lease
// duration already (as Dead would confirm from this process's view), each
// on the condition that it did not change since this process saw it. The
// sharder calls it now and then: crashed replicas leave their Leases
// behind, and a Deployment's replicas never come back under the same
// name. It returns how many it deleted.
func (m *Members) Collect(ctx context.Context) (int, error) {
	type victim struct{ id, rv string }
	var victims []victim
	m.mu.Lock()
	now := m.clock.Now()
	for id, r := range m.records {
		if r.gone.IsZero() && (r.holder == "" || !now.Before(r.seen.Add(2*r.dur))) {
			victims = append(victims, victim{id, r.rv})
		}
	}
	m.mu.Unlock()
	n := 0
	var errs []error
	for _, v := range victims {
		err := m.leases.Delete(ctx, LeaseName(m.cfg.Ring, v.id), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &v.rv}})
		switch {
		case err == nil:
			n++
			m.mu.Lock()
			if r := m.records[v.id]; r != nil && r.rv == v.rv {
				r.dead = true
			}
			m.mu.Unlock()
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Deleted or renewed since: not ours to delete.
		default:
			errs = append(errs, fmt.Errorf("delete lease of shard %s: %w", v.id, err))
		}
	}
	return n, errors.Join(errs...)
}
