package shard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

var (
	// ErrLost is the cause of a shard's end when its Lease is not its own
	// any more: renewals failed for RenewDeadline, or another process
	// wrote or deleted the Lease.
	ErrLost = errors.New("shard lease lost")
	// ErrStopped is the cause of a shard's end by Stop.
	ErrStopped = errors.New("shard stopped")
)

// Shard is this replica's membership of a ring: its Lease, held from Join
// until Stop (or until it is lost) and renewed every RetryPeriod.
type Shard struct {
	cfg         Config
	id          string
	name        string
	incarnation string
	leases      coordinationv1.LeaseInterface

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the renewals ended

	mu    sync.Mutex
	lease *coordv1.Lease // as this process last wrote it; nil once lost or released
}

// Join creates or takes shard id's Lease in cfg's ring and renews it until
// Stop, until it is lost, or until ctx ends. It returns once the Lease is
// held.
//
// A Lease of the same id that another process renews is never taken: Join
// waits until it has seen it unrenewed for its leaseDuration (the previous
// process crashed) or released. ctx bounds that wait too.
//
// ctx is the shard's lifetime: cancelling it abandons the Lease, which then
// expires; it is not a clean stop. Pass a context that outlives the drain of
// the replica's work, and call Stop after the drain, as the leader elector
// is stopped after it.
func Join(ctx context.Context, leases coordinationv1.LeasesGetter, cfg Config, id string) (*Shard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if msgs := validation.IsDNS1123Label(id); len(msgs) > 0 {
		return nil, fmt.Errorf("shard id %q: %s (see ID)", id, strings.Join(msgs, "; "))
	}
	s := &Shard{
		cfg: cfg, id: id, name: LeaseName(cfg.Ring, id),
		incarnation: string(uuid.NewUUID()),
		leases:      leases.Leases(cfg.Namespace),
		done:        make(chan struct{}),
	}
	log := klog.FromContext(ctx).WithValues("lease", cfg.Namespace+"/"+s.name, "shard", id)
	ctx = klog.NewContext(ctx, log)
	acquired, err := s.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("join ring %s as shard %s: %w", cfg.Ring, id, err)
	}
	log.Info("Joined the ring", "ring", cfg.Ring, "incarnation", s.incarnation)
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	go s.renewLoop(acquired)
	return s, nil
}

// ID is the shard's id.
func (s *Shard) ID() string { return s.id }

// Context is Join's context, also cancelled when the shard stops holding
// its Lease; context.Cause tells why (ErrLost, ErrStopped, or Join's
// context's own cause). Every reconcile of the shard's objects must end
// when it is done: past RenewDeadline others may take them over.
func (s *Shard) Context() context.Context { return s.ctx }

// Stop ends the renewals and releases the Lease: its holder cleared first,
// so that every observer sees at once that this shard stopped and may hand
// its objects to others, then deleted, so that the Leases of replicas that
// never come back do not pile up. Call it only after this replica stopped
// reconciling the shard's objects. A Lease written by anyone else since is
// left as it is. ctx bounds the two writes; when they fail, the Lease
// expires on its own a lease duration later, as after a crash.
func (s *Shard) Stop(ctx context.Context) error {
	s.cancel(ErrStopped)
	<-s.done
	s.mu.Lock()
	l := s.lease
	s.lease = nil
	s.mu.Unlock()
	if l == nil {
		return nil
	}
	out, err := s.write(ctx, l, func(l *coordv1.Lease) { l.Spec.HolderIdentity = nil })
	if errors.Is(err, ErrLost) {
		return nil // not ours any more: nothing to release
	}
	if err != nil {
		return fmt.Errorf("release lease %s/%s: %w", s.cfg.Namespace, s.name, err)
	}
	err = s.leases.Delete(ctx, s.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &out.UID, ResourceVersion: &out.ResourceVersion}})
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		// Released already: the sharder's Collect deletes it later.
		return fmt.Errorf("delete released lease %s/%s: %w", s.cfg.Namespace, s.name, err)
	}
	klog.FromContext(s.ctx).Info("Left the ring: lease released")
	return nil
}

// acquire creates the Lease, or takes it once it is free, and returns when
// the write that made it this process's was sent: the renew deadline counts
// from there.
func (s *Shard) acquire(ctx context.Context) (time.Time, error) {
	log := klog.FromContext(ctx)
	var seenRV string
	var seenRenew time.Time
	var seenAt time.Time
	waiting := false
	for {
		cur, err := s.leases.Get(ctx, s.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			start := time.Now()
			out, err := s.leases.Create(ctx, s.newLease(start), metav1.CreateOptions{FieldManager: s.cfg.Ring})
			if err == nil {
				s.lease = out
				return start, nil
			}
			if !apierrors.IsAlreadyExists(err) {
				log.V(2).Info("Creating the shard's lease failed; retrying", "err", err)
			}
		case err != nil:
			log.V(2).Info("Reading the shard's lease failed; retrying", "err", err)
		default:
			// Held by an earlier process of this id (crashed, or still
			// running beside us): free only once this process has seen
			// it unrenewed for its whole duration, by its own clock.
			now := time.Now()
			renew := renewTime(cur)
			if cur.ResourceVersion != seenRV || !renew.Equal(seenRenew) {
				seenRV, seenRenew, seenAt = cur.ResourceVersion, renew, now
			}
			free := ptr.Deref(cur.Spec.HolderIdentity, "") == "" ||
				now.Sub(seenAt) >= leaseDuration(cur, s.cfg.LeaseDuration)
			if free {
				start := time.Now()
				out, err := s.leases.Update(ctx, s.take(cur, start), metav1.UpdateOptions{FieldManager: s.cfg.Ring})
				if err == nil {
					s.lease = out
					return start, nil
				}
				log.V(2).Info("Taking the shard's lease failed; retrying", "err", err)
			} else if !waiting {
				waiting = true
				log.Info("Waiting for the shard's lease to expire: an earlier process of this id held it", "holder", ptr.Deref(cur.Spec.HolderIdentity, ""))
			}
		}
		t := time.NewTimer(s.cfg.RetryPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return time.Time{}, context.Cause(ctx)
		case <-t.C:
		}
	}
}

// newLease is the Lease as this process creates it.
func (s *Shard) newLease(now time.Time) *coordv1.Lease {
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.cfg.Namespace}}
	return s.take(l, now)
}

// take is l held by this process from now.
func (s *Shard) take(l *coordv1.Lease, now time.Time) *coordv1.Lease {
	l = l.DeepCopy()
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[RingLabel] = s.cfg.Ring
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[IncarnationAnnotation] = s.incarnation
	id, secs, t := s.id, s.cfg.leaseSeconds(), metav1.NewMicroTime(now)
	if l.Spec.HolderIdentity != nil {
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
	}
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &id, &secs
	l.Spec.AcquireTime, l.Spec.RenewTime = &t, &t
	return l
}

// renewLoop renews every RetryPeriod and ends the shard when a renewal
// shows the Lease lost, or when none has succeeded for RenewDeadline since
// the last good one was sent.
func (s *Shard) renewLoop(lastOK time.Time) {
	defer close(s.done)
	log := klog.FromContext(s.ctx)
	var lastErr error
	for {
		deadline := lastOK.Add(s.cfg.RenewDeadline)
		wait := min(s.cfg.RetryPeriod, time.Until(deadline))
		t := time.NewTimer(wait)
		select {
		case <-s.ctx.Done():
			t.Stop()
			log.Info("Shard stopped", "cause", context.Cause(s.ctx))
			return
		case <-t.C:
		}
		if !time.Now().Before(deadline) {
			s.lose(fmt.Errorf("%w: not renewed for %s: %w", ErrLost, s.cfg.RenewDeadline, lastErr), false)
			return
		}
		start := time.Now()
		// No attempt outlives the deadline: a request hanging on a dead
		// connection must not keep the shard alive.
		actx, cancel := context.WithDeadline(s.ctx, deadline)
		err := s.renew(actx, start)
		cancel()
		switch {
		case err == nil:
			lastOK, lastErr = start, nil
		case errors.Is(err, ErrLost):
			s.lose(err, true)
			return
		default:
			lastErr = err
			log.V(2).Info("Renewing the shard's lease failed; retrying", "err", err, "deadline", deadline.Format(time.RFC3339Nano))
		}
	}
}

// lose ends the shard. gone: the Lease is another's now, so Stop must not
// write it.
func (s *Shard) lose(cause error, gone bool) {
	if gone {
		s.mu.Lock()
		s.lease = nil
		s.mu.Unlock()
	}
	klog.FromContext(s.ctx).Error(cause, "Shard lost its lease: stopping")
	s.cancel(cause)
}

// renew writes a new renewTime.
func (s *Shard) renew(ctx context.Context, now time.Time) error {
	s.mu.Lock()
	l := s.lease
	s.mu.Unlock()
	t := metav1.NewMicroTime(now)
	out, err := s.write(ctx, l, func(l *coordv1.Lease) { l.Spec.RenewTime = &t })
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.lease = out
	s.mu.Unlock()
	return nil
}

// write updates the Lease, as this process last wrote it (base), by change,
// on the condition that nobody wrote it since. On a Conflict it reads the
// Lease: written by another process, it is lost; still this process's (a
// response lost on the way), change is tried again on the version read.
func (s *Shard) write(ctx context.Context, base *coordv1.Lease, change func(*coordv1.Lease)) (*coordv1.Lease, error) {
	l := base.DeepCopy()
	change(l)
	out, err := s.leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: s.cfg.Ring})
	if apierrors.IsConflict(err) {
		cur, gerr := s.leases.Get(ctx, s.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(gerr):
			return nil, fmt.Errorf("%w: lease deleted by another", ErrLost)
		case gerr != nil:
			return nil, fmt.Errorf("write lease: %w (then read it: %w)", err, gerr)
		case !s.ours(cur):
			return nil, fmt.Errorf("%w: lease written by another process (holder %q, incarnation %q)", ErrLost,
				ptr.Deref(cur.Spec.HolderIdentity, ""), cur.Annotations[IncarnationAnnotation])
		}
		l = cur.DeepCopy()
		change(l)
		out, err = s.leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: s.cfg.Ring})
	}
	switch {
	case apierrors.IsNotFound(err):
		// Deleted by someone: never created again here, since the
		// sharder may already be giving this shard's objects away.
		return nil, fmt.Errorf("%w: lease deleted by another", ErrLost)
	case err != nil:
		return nil, fmt.Errorf("write lease: %w", err)
	}
	return out, nil
}

// ours reports whether l is held by this process.
func (s *Shard) ours(l *coordv1.Lease) bool {
	return ptr.Deref(l.Spec.HolderIdentity, "") == s.id && l.Annotations[IncarnationAnnotation] == s.incarnation
}

// renewTime is l's renewTime, zero when unset.
func renewTime(l *coordv1.Lease) time.Time {
	if l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

// leaseDuration is l's leaseDurationSeconds, or def when unset.
func leaseDuration(l *coordv1.Lease, def time.Duration) time.Duration {
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds <= 0 {
		return def
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}
