package shard

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tmplop/operator/internal/testsupport/golden"
)

// testKeys are n keys of parents as the operator sees them: one kind, 97
// namespaces, names that differ in their last characters.
func testKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = Key("example.com", "Widget", fmt.Sprintf("team-%d", i%97), fmt.Sprintf("widget-%d", i))
	}
	return keys
}

// idSets are the shard ids the ring tests run on: a StatefulSet's names,
// and two sets of Deployment pod names (with the random suffix docs.go
// recommends).
func idSets() map[string][]string {
	return map[string][]string{
		"statefulset": {"operator-0", "operator-1", "operator-2", "operator-3", "operator-4", "operator-5", "operator-6", "operator-7", "operator-8", "operator-9"},
		"deployment": {"operator-7d9f8b6c5d-x2k4p-q8z1", "operator-7d9f8b6c5d-m9w3t-0c7d", "operator-7d9f8b6c5d-b5n8r-k2v6",
			"operator-7d9f8b6c5d-c4j7h-1rr9", "operator-7d9f8b6c5d-zt6q2-5m4a", "operator-7d9f8b6c5d-pv9dx-h83n",
			"operator-7d9f8b6c5d-l7s2f-wq0e", "operator-7d9f8b6c5d-gk5mb-6t1y", "operator-7d9f8b6c5d-r3x8w-ub5i", "operator-7d9f8b6c5d-hn2zc-9ppo"},
		"rollout": {"operator-5b7c9d8f4-2xqmv-a1b2", "operator-5b7c9d8f4-8kdlp-c3d4", "operator-5b7c9d8f4-fh3nz-e5f6",
			"operator-5b7c9d8f4-jw9rt-g7h8", "operator-5b7c9d8f4-mq2bx-i9j0", "operator-5b7c9d8f4-pz7cv-k1l2",
			"operator-5b7c9d8f4-s4gkn-m3n4", "operator-5b7c9d8f4-tv6yd-o5p6", "operator-5b7c9d8f4-xb8hs-q7r8", "operator-5b7c9d8f4-zr1wf-s9t0"},
	}
}

// owners counts the keys each shard of r owns.
func owners(r *Ring, keys []string) map[string]int {
	n := map[string]int{}
	for _, k := range keys {
		n[r.Owner(k)]++
	}
	return n
}

func TestRingBalance(t *testing.T) {
	keys := testKeys(100_000)
	for name, ids := range idSets() {
		t.Run(name, func(t *testing.T) {
			n := owners(NewRing(ids), keys)
			mean := float64(len(keys)) / float64(len(ids))
			lo, hi := math.MaxInt, 0
			for _, id := range ids {
				lo, hi = min(lo, n[id]), max(hi, n[id])
				if dev := float64(n[id])/mean - 1; math.Abs(dev) > 0.15 {
					t.Errorf("shard %s owns %d keys, %+.1f%% off the mean %.0f (limit ±15%%)", id, n[id], 100*dev, mean)
				}
			}
			t.Logf("%d keys over %d shards: min %d, max %d, mean %.0f (%+.1f%% .. %+.1f%%)",
				len(keys), len(ids), lo, hi, mean, 100*(float64(lo)/mean-1), 100*(float64(hi)/mean-1))
		})
	}
}

func TestRingJoin(t *testing.T) {
	keys := testKeys(100_000)
	for name, ids := range idSets() {
		t.Run(name, func(t *testing.T) {
			before, after := NewRing(ids), NewRing(append(slices.Clone(ids), "operator-new-0xk3"))
			moved := 0
			for _, k := range keys {
				from, to := before.Owner(k), after.Owner(k)
				if from == to {
					continue
				}
				moved++
				if to != "operator-new-0xk3" {
					t.Fatalf("key %s moved from %s to %s, not to the shard that joined", k, from, to)
				}
			}
			want := float64(len(keys)) / float64(len(ids)+1)
			if dev := float64(moved)/want - 1; math.Abs(dev) > 0.30 {
				t.Errorf("a join moved %d keys, %+.1f%% off 1/(n+1) = %.0f (limit ±30%%)", moved, 100*dev, want)
			}
			t.Logf("a join moved %d of %d keys (1/(n+1) = %.0f), all to the new shard", moved, len(keys), want)
		})
	}
}

func TestRingLoss(t *testing.T) {
	keys := testKeys(20_000)
	for name, ids := range idSets() {
		t.Run(name, func(t *testing.T) {
			before := NewRing(ids)
			// Every shard in turn: the property must not hold by luck of
			// which one goes.
			for _, lost := range ids {
				after := NewRing(slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == lost }))
				for _, k := range keys {
					from, to := before.Owner(k), after.Owner(k)
					if from != lost && from != to {
						t.Fatalf("losing %s moved key %s from %s to %s: between two shards that stayed", lost, k, from, to)
					}
					if to == lost {
						t.Fatalf("key %s still on %s after it was lost", k, lost)
					}
				}
			}
		})
	}
}

func TestRingDeterministic(t *testing.T) {
	keys := testKeys(10_000)
	ids := idSets()["deployment"]
	want := NewRing(ids)
	shuffled := slices.Clone(ids)
	slices.Reverse(shuffled)
	shuffled = append(shuffled[:5], append([]string{ids[3], "", ids[7]}, shuffled[5:]...)...)
	got := NewRing(shuffled)
	if !slices.Equal(got.Shards(), want.Shards()) {
		t.Fatalf("shards = %v; want %v (duplicates and \"\" ignored)", got.Shards(), want.Shards())
	}
	for _, k := range keys {
		if got.Owner(k) != want.Owner(k) {
			t.Fatalf("owner of %s depends on the order of the shards: %s vs %s", k, got.Owner(k), want.Owner(k))
		}
	}
}

func TestRingEmpty(t *testing.T) {
	for name, r := range map[string]*Ring{"nil": NewRing(nil), "only empty ids": NewRing([]string{"", ""})} {
		t.Run(name, func(t *testing.T) {
			if got := r.Owner("g/K/ns/n"); got != "" {
				t.Errorf("Owner on an empty ring = %q", got)
			}
			if r.Len() != 0 || r.Has("") || len(r.Shards()) != 0 {
				t.Errorf("empty ring: Len %d, Has(\"\") %v, Shards %v", r.Len(), r.Has(""), r.Shards())
			}
		})
	}
	one := NewRing([]string{"solo"})
	if !one.Has("solo") || one.Has("other") || one.Owner("any") != "solo" {
		t.Errorf("ring of one: Has(solo) %v, Has(other) %v, Owner %q", one.Has("solo"), one.Has("other"), one.Owner("any"))
	}
}

// TestRingGolden pins owners: the hash, the token derivation and Tokens are
// the protocol between replicas of different versions, and a change to any
// of them moves most objects at the next rollout. Change the golden file
// only on purpose (go test -run TestRingGolden -update), with a note in
// the release.
func TestRingGolden(t *testing.T) {
	r := NewRing(idSets()["statefulset"])
	var out strings.Builder
	for _, k := range testKeys(40) {
		fmt.Fprintf(&out, "%s %s\n", k, r.Owner(k))
	}
	golden.Check(t, "testdata/owners.golden", []byte(out.String()))
}
