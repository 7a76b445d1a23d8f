package shard

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// fastConfig is the shortest the Lease allows: tests of waits stay short.
func fastConfig() Config {
	return Config{Namespace: "ops", Ring: "operator", LeaseDuration: time.Second, RenewDeadline: 600 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
}

// slack is what the tests allow a timer and a fake request on a loaded
// machine.
const slack = 150 * time.Millisecond

var leasesResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func join(t *testing.T, cs *fake.Clientset, id string) *Shard {
	t.Helper()
	s, err := Join(t.Context(), cs.CoordinationV1(), fastConfig(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func getLease(t *testing.T, cs *fake.Clientset, id string) (*coordv1.Lease, error) {
	t.Helper()
	return cs.CoordinationV1().Leases("ops").Get(t.Context(), LeaseName("operator", id), metav1.GetOptions{})
}

// stoppedWithin waits for s to stop and returns how long that took.
func stoppedWithin(t *testing.T, s *Shard, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-s.Context().Done():
		return time.Since(start)
	case <-time.After(limit):
		t.Fatalf("shard still running %s later", limit)
		return 0
	}
}

func TestJoinAndStop(t *testing.T) {
	cs := fake.NewClientset()
	s := join(t, cs, "op-0")
	l, err := getLease(t, cs, "op-0")
	if err != nil {
		t.Fatal(err)
	}
	if l.Labels[RingLabel] != "operator" || ptr.Deref(l.Spec.HolderIdentity, "") != "op-0" ||
		ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != 1 || l.Spec.RenewTime == nil || l.Annotations[IncarnationAnnotation] == "" {
		t.Fatalf("lease = %+v %+v", l.ObjectMeta, l.Spec)
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(s.Context()), ErrStopped) {
		t.Errorf("cause after Stop = %v; want ErrStopped", context.Cause(s.Context()))
	}
	// Released (the observers' signal), then deleted.
	var released, deleted bool
	for _, a := range cs.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && u.GetResource().Resource == "leases" {
			released = u.GetObject().(*coordv1.Lease).Spec.HolderIdentity == nil
		}
		if _, ok := a.(k8stesting.DeleteAction); ok {
			deleted = released
		}
	}
	if !deleted {
		t.Errorf("Stop did not release, then delete, the lease: %v", cs.Actions())
	}
	if _, err := getLease(t, cs, "op-0"); !apierrors.IsNotFound(err) {
		t.Errorf("lease after Stop: %v", err)
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Errorf("second Stop = %v", err)
	}
}

func TestJoinTakesAReleasedLease(t *testing.T) {
	old := testLease("op-0", "", time.Now().Add(-time.Hour))
	cs := fake.NewClientset(old)
	start := time.Now()
	join(t, cs, "op-0")
	if took := time.Since(start); took > slack {
		t.Errorf("took a released lease in %s: it should not wait", took)
	}
	if l, _ := getLease(t, cs, "op-0"); ptr.Deref(l.Spec.HolderIdentity, "") != "op-0" {
		t.Errorf("holder = %v", l.Spec.HolderIdentity)
	}
}

// heldLease is op-0's Lease held by another process, renewed at renew,
// for 1 s.
func heldLease(renew time.Time) *coordv1.Lease {
	l := testLease("op-0", "op-0", renew)
	l.Annotations = map[string]string{IncarnationAnnotation: "another"}
	l.Spec.LeaseDurationSeconds = ptr.To[int32](1)
	return l
}

func TestJoinWaitsForAHeldLease(t *testing.T) {
	t.Run("unrenewed: taken after its duration", func(t *testing.T) {
		// An earlier process of the same id crashed a moment ago.
		cs := fake.NewClientset(heldLease(time.Now()))
		start := time.Now()
		join(t, cs, "op-0")
		// This process saw it first now: it waits its whole duration.
		if took := time.Since(start); took < time.Second || took > time.Second+fastConfig().RetryPeriod+slack {
			t.Errorf("took a held lease after %s; want its 1 s duration", took)
		}
	})
	t.Run("renewed: never taken", func(t *testing.T) {
		// Another process of the same id is running and renewing.
		cs := fake.NewClientset(heldLease(time.Now()))
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		go func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					_, _ = cs.CoordinationV1().Leases("ops").Update(ctx, heldLease(time.Now()), metav1.UpdateOptions{})
				}
			}
		}()
		if s, err := Join(ctx, cs.CoordinationV1(), fastConfig(), "op-0"); err == nil {
			_ = s.Stop(context.Background())
			t.Fatal("Join took a lease another process renews")
		}
	})
}

func TestJoinRefuses(t *testing.T) {
	cs := fake.NewClientset()
	if _, err := Join(t.Context(), cs.CoordinationV1(), fastConfig(), "Op.0"); err == nil || !strings.Contains(err.Error(), "see ID") {
		t.Errorf("Join with an id that is no DNS label = %v", err)
	}
	bad := fastConfig()
	bad.RenewDeadline = bad.LeaseDuration
	if _, err := Join(t.Context(), cs.CoordinationV1(), bad, "op-0"); err == nil || !strings.Contains(err.Error(), "renew deadline") {
		t.Errorf("Join with a renew deadline equal to the lease duration = %v", err)
	}
	if len(cs.Actions()) != 0 {
		t.Errorf("a refused Join sent requests: %v", cs.Actions())
	}
}

func TestShardStops(t *testing.T) {
	cfg := fastConfig()
	cases := []struct {
		name string
		// updateErr, when set, is every renewal's answer from the fault
		// on (the fake's reactors cannot be added while it is in use).
		updateErr error
		// fault, when set, changes the Lease behind the shard's back.
		fault func(t *testing.T, cs *fake.Clientset)
		// within is how soon the shard must stop, from the fault.
		within, notBefore time.Duration
		lost              bool // the Lease is another's: Stop must not write it
	}{
		{
			name:      "renewals fail: stopped at the renew deadline",
			updateErr: apierrors.NewServiceUnavailable("etcd away"),
			within:    cfg.RenewDeadline + slack, notBefore: cfg.RenewDeadline - cfg.RetryPeriod - slack,
		},
		{
			name:      "renewals forbidden: stopped at the renew deadline",
			updateErr: apierrors.NewForbidden(leasesResource, "operator-shard-op-0", errors.New("RBAC")),
			within:    cfg.RenewDeadline + slack, notBefore: cfg.RenewDeadline - cfg.RetryPeriod - slack,
		},
		{
			name: "lease deleted by another: stopped at the next renewal",
			fault: func(t *testing.T, cs *fake.Clientset) {
				if err := cs.CoordinationV1().Leases("ops").Delete(t.Context(), "operator-shard-op-0", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			within: cfg.RetryPeriod + slack, lost: true,
		},
		{
			name: "lease written by another process: stopped at the next renewal",
			fault: func(t *testing.T, cs *fake.Clientset) {
				l, err := cs.CoordinationV1().Leases("ops").Get(t.Context(), "operator-shard-op-0", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				l.Annotations[IncarnationAnnotation] = "another"
				if err := cs.Tracker().Update(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, l, "ops"); err != nil {
					t.Fatal(err)
				}
			},
			// The fake keeps no resourceVersions: the API server's answer
			// to a write on an old one is a Conflict.
			updateErr: apierrors.NewConflict(leasesResource, "operator-shard-op-0", errors.New("modified")),
			within:    cfg.RetryPeriod + slack, lost: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			var armed atomic.Bool
			cs.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
				if tc.updateErr == nil || !armed.Load() {
					return false, nil, nil
				}
				return true, nil, tc.updateErr
			})
			s := join(t, cs, "op-0")
			if tc.fault != nil {
				tc.fault(t, cs)
			}
			armed.Store(true)
			took := stoppedWithin(t, s, 5*time.Second)
			if took > tc.within || took < tc.notBefore {
				t.Errorf("stopped %s after the fault; want between %s and %s", took, tc.notBefore, tc.within)
			}
			if !errors.Is(context.Cause(s.Context()), ErrLost) {
				t.Errorf("cause = %v; want ErrLost", context.Cause(s.Context()))
			}
			t.Logf("stopped %s after the fault: %v", took.Round(time.Millisecond), context.Cause(s.Context()))
			if tc.lost {
				n := len(cs.Actions())
				if err := s.Stop(t.Context()); err != nil {
					t.Fatal(err)
				}
				if len(cs.Actions()) != n {
					t.Errorf("Stop wrote a lease that is not the shard's any more: %v", cs.Actions()[n:])
				}
			}
		})
	}
}

// TestShardLostResponse: a renewal applied whose response was lost makes
// the next renewal conflict; the Lease still carries this process's
// incarnation, so the shard carries on.
func TestShardLostResponse(t *testing.T) {
	cfg := fastConfig()
	cs := fake.NewClientset()
	var conflicts atomic.Int32
	cs.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts.Add(1) <= 3 {
			return true, nil, apierrors.NewConflict(leasesResource, "operator-shard-op-0", errors.New("modified"))
		}
		return false, nil, nil
	})
	s := join(t, cs, "op-0")
	select {
	case <-s.Context().Done():
		t.Fatalf("shard stopped: %v", context.Cause(s.Context()))
	case <-time.After(cfg.LeaseDuration + cfg.RetryPeriod):
	}
	if n := conflicts.Load(); n <= 3 {
		t.Fatalf("%d updates; want the 3 conflicts and renewals after them", n)
	}
}
