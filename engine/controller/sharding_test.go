package controller

import (
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/tmplop/operator/engine/shard"
)

// fakeLeases serves Leases from a fake clientset, which tells informers
// that it does not serve watch-list.
type fakeLeases struct {
	coordinationv1.LeasesGetter
	*fake.Clientset
}

// ringOf is the live members of a ring whose shards are ids, as a replica
// sees them.
func ringOf(t *testing.T, ids ...string) *shard.Members {
	t.Helper()
	cfg := shard.Config{Namespace: "ops", Ring: "op", LeaseDuration: 10 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: time.Second}
	cs := fake.NewClientset()
	m, err := shard.NewMembers(fakeLeases{cs.CoordinationV1(), cs}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Created once the view watches: seen written, so live (a Lease
	// found in the first list is live only once seen renewed).
	for _, id := range ids {
		l := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: shard.LeaseName("op", id), Namespace: "ops", Labels: map[string]string{shard.RingLabel: "op"}},
			Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To(id), LeaseDurationSeconds: ptr.To[int32](10),
				RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))},
		}
		if _, err := cs.CoordinationV1().Leases("ops").Create(t.Context(), l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The view has seen them all before any kind starts on it: a kind
	// started on a view of fewer shards serves objects that are not its
	// own (under load, TestHandOverMarked reconciled the object it was to
	// hand over).
	eventually(t, "the ring of "+strings.Join(ids, ", "), func() bool {
		r, _ := m.Ring()
		return r.Len() == len(ids)
	})
	return m
}

func labelled(u *unstructured.Unstructured, shardID string) *unstructured.Unstructured {
	u.SetLabels(map[string]string{shard.ShardLabel: shardID})
	return u
}

// TestShardedManagerOnFakes: a shard serves the objects labelled with it,
// and only those; its children carry its shard; it is ready once the ring
// shows it.
func TestShardedManagerOnFakes(t *testing.T) {
	cases := []struct {
		name      string
		ring      []string
		wantReady bool
	}{
		{name: "on the ring: serves its objects, ready", ring: []string{"a"}, wantReady: true},
		{name: "not on the ring yet: not ready", ring: []string{"b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// On a ring of a alone, w1 belongs where it is labelled; w2 is
			// labelled with a shard not on the ring (the sharder's to
			// move), w3 with none (the sharder's to assign).
			f := newFakeCluster(t, labelled(widget("ns", "w1", 3), "a"), labelled(widget("ns", "w2", 4), "b"), widget("ns", "w3", 5))
			members := ringOf(t, tc.ring...)
			m, ctx := newTestManager(t, f, Options{Sharding: &Sharding{ID: "a", Members: members, Sharder: make(chan struct{})}})
			if err := m.SyncFolders(ctx, fakeFolders{loadWidget(t)}); err != nil {
				t.Fatal(err)
			}
			if !tc.wantReady {
				eventually(t, "the kind listed", func() bool {
					err := m.Ready()
					return err != nil && err.Error() == `shard a is not on the ring yet: its Lease is not seen live (live shards: [b])`
				})
				return
			}
			eventually(t, "w1's child applied", func() bool { return f.get(configMapsGVR, "ns", "w1-config") != nil })
			eventually(t, "the manager ready", func() bool { return m.Ready() == nil })
			cm := f.get(configMapsGVR, "ns", "w1-config")
			if got := cm.GetLabels()[shard.HeldByLabel]; got != "a" {
				t.Errorf("w1's child held by %q; want a", got)
			}
			// The server filters: the shard's watch selects its own objects.
			m.mu.Lock()
			kc := m.kinds[widgetGVK.GroupKind()]
			m.mu.Unlock()
			kc.mu.Lock()
			sel := kc.watch.key.selector
			kc.mu.Unlock()
			if sel != shard.ShardLabel+"=a" {
				t.Errorf("the shard's watch selects %q; want %s=a", sel, shard.ShardLabel)
			}
			time.Sleep(200 * time.Millisecond) // room for a wrong apply
			for _, name := range []string{"w2-config", "w3-config"} {
				if f.get(configMapsGVR, "ns", name) != nil {
					t.Errorf("%s applied by shard a: its parent is not labelled a", name)
				}
			}
		})
	}
}

// TestShardStateRemember: a hand-over is remembered only while the cache
// still shows the version handed over; once the watch delivered the move
// (the object gone from the cache, or newer), its deletion's forget may
// have run already, and an entry made then would stay for good.
func TestShardStateRemember(t *testing.T) {
	key := cache.ObjectName{Namespace: "ns", Name: "o"}
	cases := []struct {
		name   string
		cached string // the version in the cache; "" for none
		want   bool
	}{
		{name: "the cache shows the version handed over", cached: "7", want: true},
		{name: "the cache has a newer version", cached: "8"},
		{name: "the object left the cache", cached: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			if tc.cached != "" {
				if err := store.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", ResourceVersion: tc.cached}}); err != nil {
					t.Fatal(err)
				}
			}
			var s shardState
			s.remember(key, "7", store)
			if got := s.handedOver(key, "7"); got != tc.want {
				t.Errorf("handedOver = %v; want %v", got, tc.want)
			}
			if got := len(s.handed); got != map[bool]int{true: 1}[tc.want] {
				t.Errorf("%d entries kept", got)
			}
		})
	}
}
