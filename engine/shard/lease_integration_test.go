package shard_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/tmplop/operator/engine/shard"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// The Leases tests run on a control plane of their own (etcd and
// kube-apiserver: Leases need nothing else), started by the first test that
// needs it, so that the package's unit tests and benchmarks run without
// one.
var plane cluster.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	plane.Stop()
	os.Exit(code)
}

func controlPlane(t *testing.T) *cluster.Cluster {
	t.Helper()
	return plane.Get(t)
}

// The durations of these tests: short, in the proportions of Kubernetes'
// own (15 s, 10 s, 2 s).
const (
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

func config(ns string) shard.Config {
	return shard.Config{Namespace: ns, Ring: "operator", LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod}
}

func leasesClient(t *testing.T, cfg *rest.Config) coordinationv1.CoordinationV1Interface {
	t.Helper()
	c, err := coordinationv1.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// join joins shard id through client; the shard is stopped when the test
// ends, if the test did not end it.
func join(t *testing.T, ctx context.Context, client coordinationv1.LeasesGetter, ns, id string) *shard.Shard {
	t.Helper()
	s, err := shard.Join(ctx, client, config(ns), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

// watch starts a Members view of the ring in ns, as one replica has it.
func watch(t *testing.T, client coordinationv1.LeasesGetter, ns string) *shard.Members {
	t.Helper()
	m, err := shard.NewMembers(client, config(ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m
}

// waitLive waits until m's live shards are want and returns when it saw
// them, by the change notification, not by polling.
func waitLive(t *testing.T, m *shard.Members, timeout time.Duration, want ...string) time.Time {
	t.Helper()
	deadline := time.After(timeout)
	for {
		r, changed := m.Ring()
		if got := r.Shards(); slices.Equal(got, want) || len(got) == 0 && len(want) == 0 {
			return time.Now()
		}
		select {
		case <-changed:
		case <-deadline:
			r, _ := m.Ring()
			t.Fatalf("live shards %v; want %v within %s", r.Shards(), want, timeout)
		}
	}
}

func dead(t *testing.T, m *shard.Members, id string) bool {
	t.Helper()
	d, err := m.Dead(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestShardsJoinAndLeave: two shards join and each sees both live; one
// stops cleanly and the other sees it gone at once, well before its Lease
// could have expired.
func TestShardsJoinAndLeave(t *testing.T) {
	env := controlPlane(t)
	ns := env.Namespace(t)
	client := leasesClient(t, env.Config)
	a := join(t, t.Context(), client, ns, "a")
	b := join(t, t.Context(), client, ns, "b")
	ma, mb := watch(t, client, ns), watch(t, client, ns)
	waitLive(t, ma, 5*time.Second, "a", "b")
	waitLive(t, mb, 5*time.Second, "a", "b")

	l, err := client.Leases(ns).Get(t.Context(), "operator-shard-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Labels[shard.RingLabel] != "operator" || ptr.Deref(l.Spec.HolderIdentity, "") != "a" || ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != 3 {
		t.Errorf("a's lease: labels %v, holder %v, duration %v", l.Labels, l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds)
	}
	// Renewed every retry period.
	first := l.Spec.RenewTime.Time
	cluster.Eventually(t, 2*retryPeriod+time.Second, "a's lease renewed", func(ctx context.Context) (bool, error) {
		l, err := client.Leases(ns).Get(ctx, "operator-shard-a", metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(first), err
	})

	start := time.Now()
	if err := a.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	gone := waitLive(t, mb, leaseDuration, "b").Sub(start)
	if gone > time.Second {
		t.Errorf("b saw a gone %s after a stopped; want at once, not after about its lease duration %s", gone, leaseDuration)
	}
	if !dead(t, mb, "a") {
		t.Error("a stopped cleanly, yet Dead(a) is false: its objects would wait a lease duration")
	}
	if _, err := client.Leases(ns).Get(t.Context(), "operator-shard-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a's lease after Stop: %v; want it deleted", err)
	}
	if b.Context().Err() != nil {
		t.Errorf("b stopped too: %v", context.Cause(b.Context()))
	}
	t.Logf("a stopped cleanly; b saw it gone after %s", gone.Round(time.Millisecond))
}

// TestShardCrashes: a shard stops renewing without a word; the other sees
// it expire within its lease duration and a second, and not before Dead can
// confirm it.
func TestShardCrashes(t *testing.T) {
	env := controlPlane(t)
	ns := env.Namespace(t)
	client := leasesClient(t, env.Config)
	ctx, crash := context.WithCancel(t.Context())
	c := join(t, ctx, client, ns, "c")
	join(t, t.Context(), client, ns, "d")
	md := watch(t, client, ns)
	waitLive(t, md, 5*time.Second, "c", "d")

	start := time.Now()
	crash() // no release: the Lease stays, unrenewed
	<-c.Context().Done()
	if dead(t, md, "c") {
		t.Fatal("Dead(c) right after its last renewal: its objects could move while it works")
	}
	expired := waitLive(t, md, leaseDuration+2*time.Second, "d").Sub(start)
	if expired > leaseDuration+time.Second || expired < leaseDuration-retryPeriod-time.Second/2 {
		t.Errorf("c expired %s after it stopped renewing; want its lease duration %s (+1 s, - one retry period)", expired, leaseDuration)
	}
	if !dead(t, md, "c") {
		t.Error("c expired, yet Dead(c) is false")
	}
	t.Logf("c crashed; d saw its lease expire after %s", expired.Round(time.Millisecond))
}

// TestShardRenewalsFail: a shard whose renewals fail stops itself within
// its renew deadline, and before any other replica can see its Lease
// expire.
func TestShardRenewalsFail(t *testing.T) {
	env := controlPlane(t)
	isLeaseUpdate := func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/leases/")
	}
	cases := []struct {
		name  string
		fault func(p *harness.Proxy)
	}{
		{name: "API server unreachable", fault: func(p *harness.Proxy) { p.Down() }},
		{name: "lease updates forbidden", fault: func(p *harness.Proxy) { p.FailRequests(isLeaseUpdate, http.StatusForbidden) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			proxy, err := harness.NewProxy(env.Config)
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			e := join(t, t.Context(), leasesClient(t, proxy.Config()), ns, "e")
			observer := watch(t, leasesClient(t, env.Config), ns)
			waitLive(t, observer, 5*time.Second, "e")

			start := time.Now()
			tc.fault(proxy)
			select {
			case <-e.Context().Done():
			case <-time.After(renewDeadline + 2*time.Second):
				t.Fatalf("shard still running %s after its renewals began to fail", renewDeadline+2*time.Second)
			}
			stopped := time.Since(start)
			if !errors.Is(context.Cause(e.Context()), shard.ErrLost) {
				t.Errorf("cause = %v; want ErrLost", context.Cause(e.Context()))
			}
			if stopped > renewDeadline+200*time.Millisecond || stopped < renewDeadline-retryPeriod-200*time.Millisecond {
				t.Errorf("stopped %s after the fault; want its renew deadline %s (- one retry period)", stopped, renewDeadline)
			}
			expired := waitLive(t, observer, leaseDuration+2*time.Second).Sub(start)
			if expired <= stopped {
				t.Errorf("the observer saw e's lease expire (%s) before e stopped (%s): both could work on its objects", expired, stopped)
			}
			t.Logf("e stopped %s after the fault; the observer saw its lease expire at %s: a margin of %s",
				stopped.Round(time.Millisecond), expired.Round(time.Millisecond), (expired - stopped).Round(time.Millisecond))
		})
	}
}

// TestShardLeaseDeleted: a Lease deleted behind its holder's back stops
// the holder at its next renewal; the holder never creates it again, and
// observers do not count it dead until a lease duration later.
func TestShardLeaseDeleted(t *testing.T) {
	env := controlPlane(t)
	ns := env.Namespace(t)
	client := leasesClient(t, env.Config)
	f := join(t, t.Context(), client, ns, "f")
	observer := watch(t, client, ns)
	waitLive(t, observer, 5*time.Second, "f")

	start := time.Now()
	if err := client.Leases(ns).Delete(t.Context(), "operator-shard-f", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.Context().Done():
	case <-time.After(retryPeriod + time.Second):
		t.Fatalf("shard still running %s after its lease was deleted", retryPeriod+time.Second)
	}
	stopped := time.Since(start)
	if !errors.Is(context.Cause(f.Context()), shard.ErrLost) {
		t.Errorf("cause = %v; want ErrLost", context.Cause(f.Context()))
	}
	if dead(t, observer, "f") {
		t.Error("Dead(f) right after its lease vanished: its holder may still be working")
	}
	if _, err := client.Leases(ns).Get(t.Context(), "operator-shard-f", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("f's lease after it was deleted: %v; want it left deleted", err)
	}
	cluster.Eventually(t, leaseDuration+time.Second, "Dead(f) a lease duration after its lease vanished", func(ctx context.Context) (bool, error) {
		return observer.Dead(ctx, "f")
	})
	t.Logf("f stopped %s after its lease was deleted; Dead(f) after %s", stopped.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// TestShardSameID: a second process given a running shard's id never takes
// its Lease; after that shard crashed, it takes it once the Lease expired.
func TestShardSameID(t *testing.T) {
	env := controlPlane(t)
	ns := env.Namespace(t)
	client := leasesClient(t, env.Config)
	ctx, crash := context.WithCancel(t.Context())
	first := join(t, ctx, client, ns, "g")

	wait, cancel := context.WithTimeout(t.Context(), leaseDuration+time.Second)
	defer cancel()
	if s, err := shard.Join(wait, client, config(ns), "g"); err == nil {
		_ = s.Stop(context.Background())
		t.Fatal("a second process took the lease of a running shard of the same id")
	}
	if first.Context().Err() != nil {
		t.Fatalf("the running shard stopped: %v", context.Cause(first.Context()))
	}

	crash()
	start := time.Now()
	join(t, t.Context(), client, ns, "g")
	if took := time.Since(start); took > leaseDuration+retryPeriod+time.Second {
		t.Errorf("took the crashed shard's lease after %s; want about its lease duration", took)
	}
	t.Logf("a second process of the same id took the crashed one's lease after %s", time.Since(start).Round(time.Millisecond))
}

// TestAssignPatchConflicts: the sharder and a holder writing the label on
// the same resourceVersion never both win.
func TestAssignPatchConflicts(t *testing.T) {
	env := controlPlane(t)
	ns := env.Namespace(t)
	cms, err := corev1client.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := cms.ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "parent",
		Labels: map[string]string{shard.ShardLabel: "old"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wins, conflicts := 0, 0
	for _, to := range []string{"by-sharder", "by-holder"} {
		patch, err := shard.AssignPatch(to, cm.ResourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cms.ConfigMaps(ns).Patch(t.Context(), "parent", types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			wins++
		case apierrors.IsConflict(err):
			conflicts++
		default:
			t.Fatal(err)
		}
	}
	got, err := cms.ConfigMaps(ns).Get(t.Context(), "parent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if wins != 1 || conflicts != 1 || got.Labels[shard.ShardLabel] != "by-sharder" {
		t.Errorf("%d wins, %d conflicts, label %q; want 1, 1, by-sharder", wins, conflicts, got.Labels[shard.ShardLabel])
	}
	t.Logf("two writes on resourceVersion %s: the first won, the second got a Conflict", cm.ResourceVersion)
}
