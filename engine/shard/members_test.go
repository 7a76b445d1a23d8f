package shard

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// fakeLeases is the fake clientset's Leases client, telling the informer
// (as the clientset itself would) that the fake serves no watch-list.
type fakeLeases struct {
	coordinationv1.LeasesGetter
	*fake.Clientset
}

func testConfig() Config {
	return Config{Namespace: "ops", Ring: "operator", LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}
}

// testLease is shard id's Lease held by holder ("" released), renewed at
// renew.
func testLease(id, holder string, renew time.Time) *coordv1.Lease {
	l := &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeaseName("operator", id), Namespace: "ops", Labels: map[string]string{RingLabel: "operator"}},
		Spec:       coordv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](3), RenewTime: ptr.To(metav1.NewMicroTime(renew))},
	}
	if holder != "" {
		l.Spec.HolderIdentity = &holder
	}
	return l
}

// startMembers runs Members on a fake clientset holding objs, on a fake
// clock.
func startMembers(t *testing.T, objs ...runtime.Object) (*Members, *fake.Clientset, *clocktesting.FakeClock) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	m, err := NewMembers(fakeLeases{cs.CoordinationV1(), cs}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	m.clock = clk
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return m, cs, clk
}

// waitRing waits for the live shards to be want, and returns the channel
// of that ring.
func waitRing(t *testing.T, m *Members, want ...string) <-chan struct{} {
	t.Helper()
	var got []string
	var ch <-chan struct{}
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		var r *Ring
		r, ch = m.Ring()
		got = r.Shards()
		return slices.Equal(got, want) || len(got) == 0 && len(want) == 0, nil
	})
	if err != nil {
		t.Fatalf("live shards = %v; want %v", got, want)
	}
	return ch
}

// waitClosed fails unless ch is closed within 5 s.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no change notified", what)
	}
}

// waitSeen waits until m has seen id's Lease renewed at renew.
func waitSeen(t *testing.T, m *Members, id string, renew time.Time) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		r := m.records[id]
		return r != nil && r.renew.Equal(renew), nil
	})
	if err != nil {
		t.Fatalf("renewal of %s at %s not seen", id, renew)
	}
}

// stepRenewing moves the clock by d, and shard "live" renews then, as a
// running shard does, and is seen doing so.
func stepRenewing(t *testing.T, m *Members, cs *fake.Clientset, clk *clocktesting.FakeClock, d time.Duration) {
	t.Helper()
	clk.Step(d)
	if _, err := cs.CoordinationV1().Leases("ops").Update(t.Context(), testLease("live", "live", clk.Now()), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSeen(t, m, "live", clk.Now())
}

// renewNow has each of ids renew its Lease at the fake clock's now, and
// waits until m has seen it.
func renewNow(t *testing.T, m *Members, cs *fake.Clientset, clk *clocktesting.FakeClock, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := cs.CoordinationV1().Leases("ops").Update(t.Context(), testLease(id, id, clk.Now()), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitSeen(t, m, id, clk.Now())
	}
}

func TestMembersLive(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	before := t0.Add(-time.Second) // the renewals found in the first list
	m, cs, clk := startMembers(t,
		testLease("a", "a", before), testLease("b", "b", before),
		// Found in the first list and never renewed after: the Lease a
		// killed shard left behind.
		testLease("stale", "stale", before),
		// Not live: held under another id's name, and a Lease of the
		// ring that is not a shard's.
		testLease("x", "y", before),
		&coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "operator-leader", Namespace: "ops", Labels: map[string]string{RingLabel: "operator"}},
			Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](3)}},
	)
	leases := cs.CoordinationV1().Leases("ops")
	// Nothing is live before it is seen renewing: a Lease in the first
	// list may be years old, and this process has no clock to judge its
	// renewTime by but its own.
	if r, _ := m.Ring(); r.Len() != 0 {
		t.Fatalf("live shards from the first list alone = %v; want none", r.Shards())
	}
	renewNow(t, m, cs, clk, "a", "b")
	ch := waitRing(t, m, "a", "b")
	if d, err := m.Dead(t.Context(), "stale"); err != nil || d {
		t.Errorf("Dead(stale) at the start = %v, %v; want false: not seen unrenewed for its duration yet", d, err)
	}

	// a renews at +2 s; b does not. At +3.5 s b has expired without a
	// word, and the timer says so.
	clk.Step(2 * time.Second)
	renewed := clk.Now()
	if _, err := leases.Update(t.Context(), testLease("a", "a", renewed), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSeen(t, m, "a", renewed)
	select {
	case <-ch:
		t.Fatal("a renewal notified a change: the live set did not change")
	default:
	}
	clk.Step(1500 * time.Millisecond)
	waitClosed(t, ch, "b expired")
	ch = waitRing(t, m, "a")
	if d, err := m.Dead(t.Context(), "stale"); err != nil || !d {
		t.Errorf("Dead(stale) at +3.5s = %v, %v; want true", d, err)
	}

	// a releases: gone at once, before its Lease would expire.
	if _, err := leases.Update(t.Context(), testLease("a", "", renewed), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, ch, "a released")
	ch = waitRing(t, m)

	// c joins, then its Lease is deleted: gone at once.
	if _, err := leases.Create(t.Context(), testLease("c", "c", clk.Now()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, ch, "c joined")
	ch = waitRing(t, m, "c")
	if err := leases.Delete(t.Context(), LeaseName("operator", "c"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, ch, "c deleted")
	waitRing(t, m)
}

func TestMembersDead(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	before := t0.Add(-time.Second)
	m, cs, clk := startMembers(t,
		testLease("live", "live", before), testLease("silent", "silent", before), testLease("released", "", before),
		testLease("vanished", "vanished", before), testLease("left", "left", before))
	leases := cs.CoordinationV1().Leases("ops")
	renewNow(t, m, cs, clk, "left", "live", "silent", "vanished")
	waitRing(t, m, "left", "live", "silent", "vanished")

	dead := func(id string) bool {
		t.Helper()
		d, err := m.Dead(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	step := func(d time.Duration) { t.Helper(); stepRenewing(t, m, cs, clk, d) }
	check := func(want map[string]bool) {
		t.Helper()
		for id, w := range want {
			if got := dead(id); got != w {
				t.Errorf("at +%s: Dead(%s) = %v; want %v", clk.Since(t0), id, got, w)
			}
		}
	}

	// At +1 s: left releases, then deletes its Lease, as Stop does;
	// vanished's Lease is deleted by someone else while live.
	step(time.Second)
	if _, err := leases.Update(t.Context(), testLease("left", "", t0), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRing(t, m, "live", "silent", "vanished")
	for _, id := range []string{"left", "vanished"} {
		if err := leases.Delete(t.Context(), LeaseName("operator", id), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitRing(t, m, "live", "silent")
	check(map[string]bool{
		"live": false, "silent": false,
		"released": true, "left": true, // released by their holders: at once
		"vanished": false, // its holder may still work until its next renewal fails
		"never":    false, // never seen: perhaps deleted just before this process started
	})
	step(2500 * time.Millisecond) // +3.5 s
	check(map[string]bool{
		"live": false, "silent": true, // unrenewed for its 3 s
		"never":    true,  // 3 s after this process started
		"vanished": false, // missed at +1 s: not 3 s yet
	})
	step(time.Second) // +4.5 s
	check(map[string]bool{"live": false, "vanished": true})

	// A failed read is no answer.
	cs.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	if d, err := m.Dead(t.Context(), "silent"); err == nil {
		t.Errorf("Dead with the API server away = %v, nil; want an error", d)
	}
}

// TestMembersDeadReadsTheServer: the watch may be behind; Dead believes
// the Lease it reads.
func TestMembersDeadReadsTheServer(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cs := fake.NewClientset(testLease("a", "a", t0))
	m, err := NewMembers(fakeLeases{cs.CoordinationV1(), cs}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(t0)
	m.clock = clk // and no Start: no watch at all
	check := func(want bool) {
		t.Helper()
		if got, err := m.Dead(t.Context(), "a"); err != nil || got != want {
			t.Fatalf("at +%s: Dead(a) = %v, %v; want %v", clk.Since(t0), got, err, want)
		}
	}
	check(false) // first seen now
	clk.Step(3 * time.Second)
	check(true) // seen unrenewed for its duration
	// Renewed on the server (a new incarnation of a, say): alive again.
	if _, err := cs.CoordinationV1().Leases("ops").Update(t.Context(), testLease("a", "a", clk.Now()), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check(false)
}

func TestMembersCollect(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	before := t0.Add(-time.Second)
	m, cs, clk := startMembers(t,
		testLease("live", "live", before), testLease("crashed", "crashed", before), testLease("released", "", before))
	leases := cs.CoordinationV1().Leases("ops")
	renewNow(t, m, cs, clk, "crashed", "live")
	waitRing(t, m, "crashed", "live")
	step := func(d time.Duration) { t.Helper(); stepRenewing(t, m, cs, clk, d) }
	exists := func(id string) bool {
		_, err := leases.Get(t.Context(), LeaseName("operator", id), metav1.GetOptions{})
		return err == nil
	}

	step(4 * time.Second) // crashed expired 1 s ago: not dead long enough
	if n, err := m.Collect(t.Context()); err != nil || n != 1 || exists("released") || !exists("crashed") || !exists("live") {
		t.Fatalf("Collect at +4s = %d, %v; leases released %v, crashed %v, live %v; want only released deleted",
			n, err, exists("released"), exists("crashed"), exists("live"))
	}
	step(2 * time.Second) // crashed dead for a lease duration
	if n, err := m.Collect(t.Context()); err != nil || n != 1 || exists("crashed") || !exists("live") {
		t.Fatalf("Collect at +6s = %d, %v; leases crashed %v, live %v; want crashed deleted", n, err, exists("crashed"), exists("live"))
	}
	// Collected as dead: its objects may move at once.
	if d, err := m.Dead(t.Context(), "crashed"); err != nil || !d {
		t.Errorf("Dead(crashed) after Collect = %v, %v; want true", d, err)
	}
}
