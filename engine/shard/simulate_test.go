package shard

import (
	"math"
	"slices"
	"testing"
	"time"
)

// round is one pass of every party over objs, as the sharder's watch and
// each holder's would make it, with each write applied: the sharder's
// Assign, then the holder's HandOver (their answers never overlap:
// TestDecideNeverOverlaps). It returns the writes of each kind.
func round(objs []Object, ring *Ring) (assigns, handovers int) {
	for i := range objs {
		o := &objs[i]
		if a := Decide(*o, ring, ring.Has, ""); a.Verb == Assign {
			o.Shard = a.To
			assigns++
			continue
		}
		if o.Shard == "" {
			continue
		}
		if a := Decide(*o, ring, ring.Has, o.Shard); a.Verb == HandOver {
			o.Shard = a.To
			handovers++
		}
	}
	return assigns, handovers
}

// settle runs a round to the new ring and checks that it converged in one:
// every object on its owner, a second round with nothing to write.
func settle(t *testing.T, objs []Object, ring *Ring) (assigns, handovers int, took time.Duration) {
	t.Helper()
	start := time.Now()
	assigns, handovers = round(objs, ring)
	took = time.Since(start)
	if a, h := round(objs, ring); a+h != 0 {
		t.Fatalf("a second round wrote %d labels: the first did not converge", a+h)
	}
	for _, o := range objs {
		if o.Shard != ring.Owner(o.Key) {
			t.Fatalf("%s on %q after settling; its owner is %s", o.Key, o.Shard, ring.Owner(o.Key))
		}
	}
	return assigns, handovers, took
}

// TestSimulate100k runs the protocol's decisions, without a cluster, on
// 100,000 objects over 10 shards: assignment, the loss of one shard, the
// join of an 11th. The figures it logs are docs/sharding.md's.
func TestSimulate100k(t *testing.T) {
	const n = 100_000
	keys := testKeys(n)
	ids := idSets()["deployment"]

	start := time.Now()
	ring := NewRing(ids)
	build := time.Since(start)
	start = time.Now()
	for _, k := range keys {
		_ = ring.Owner(k)
	}
	lookups := time.Since(start)
	t.Logf("ring of %d shards x %d tokens built in %s; %d owners in %s (%.1f M lookups/s)",
		len(ids), Tokens, build.Round(time.Microsecond), n, lookups.Round(time.Microsecond), float64(n)/lookups.Seconds()/1e6)

	objs := make([]Object, n)
	for i, k := range keys {
		objs[i] = Object{Key: k}
	}
	if a, h, _ := settle(t, objs, ring); a != n || h != 0 {
		t.Fatalf("first assignment: %d assigns, %d hand-overs; want %d, 0", a, h, n)
	}
	held := map[string]int{}
	for _, o := range objs {
		held[o.Shard]++
	}
	lo, hi := n, 0
	for _, id := range ids {
		lo, hi = min(lo, held[id]), max(hi, held[id])
	}
	mean := float64(n) / float64(len(ids))
	t.Logf("assigned: %d label writes; objects per shard min %d, max %d, mean %.0f (%+.1f%% .. %+.1f%%)",
		n, lo, hi, mean, 100*(float64(lo)/mean-1), 100*(float64(hi)/mean-1))

	// One shard lost: only its objects move, each with one write by the
	// sharder.
	lost := ids[3]
	before := slices.Clone(objs)
	survivors := NewRing(slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == lost }))
	a, h, decide := settle(t, objs, survivors)
	moved := 0
	for i, o := range objs {
		if o.Shard == before[i].Shard {
			continue
		}
		moved++
		if before[i].Shard != lost {
			t.Fatalf("%s moved from %s to %s, two shards that stayed", o.Key, before[i].Shard, o.Shard)
		}
	}
	if moved != held[lost] || a != moved || h != 0 {
		t.Fatalf("loss of %s: %d moved, %d assigns, %d hand-overs; want %d moved, as many assigns, no hand-over", lost, moved, a, h, held[lost])
	}
	if dev := float64(moved)/mean - 1; math.Abs(dev) > 0.30 {
		t.Errorf("loss moved %d objects, %+.1f%% off 1/n = %.0f (limit ±30%%)", moved, 100*dev, mean)
	}
	t.Logf("one shard lost: %d objects moved (1/n = %.0f), %d label writes (all the sharder's), none between survivors; one round of decisions over all %d objects in %s",
		moved, mean, a+h, n, decide.Round(time.Microsecond))

	// An 11th shard joins (to the ring of the 9 survivors and the lost
	// one back, i.e. 10 + 1): about 1/11 move, all to it, each with one
	// write by its old holder.
	ids11 := append(slices.Clone(ids), "operator-7d9f8b6c5d-new11-v3k9")
	settle(t, objs, NewRing(ids)) // back to 10 shards
	before = slices.Clone(objs)
	a, h, _ = settle(t, objs, NewRing(ids11))
	moved = 0
	for i, o := range objs {
		if o.Shard == before[i].Shard {
			continue
		}
		moved++
		if o.Shard != ids11[10] {
			t.Fatalf("%s moved from %s to %s, not to the shard that joined", o.Key, before[i].Shard, o.Shard)
		}
	}
	want := float64(n) / float64(len(ids11))
	if moved != h || a != 0 {
		t.Fatalf("join: %d moved, %d assigns, %d hand-overs; want as many hand-overs as moves, no assign", moved, a, h)
	}
	if dev := float64(moved)/want - 1; math.Abs(dev) > 0.30 {
		t.Errorf("join moved %d objects, %+.1f%% off 1/(n+1) = %.0f (limit ±30%%)", moved, 100*dev, want)
	}
	t.Logf("an 11th shard joined: %d objects moved (1/(n+1) = %.0f), %d label writes (all hand-overs by the old holders)", moved, want, h)
}

func BenchmarkRingOwner(b *testing.B) {
	keys := testKeys(100_000)
	ring := NewRing(idSets()["deployment"])
	hits := 0
	for i := 0; b.Loop(); i++ {
		if ring.Owner(keys[i%len(keys)]) == "" {
			hits++
		}
	}
	if hits != 0 {
		b.Fatal("a key without an owner")
	}
}

func BenchmarkNewRing(b *testing.B) {
	ids := idSets()["deployment"]
	for b.Loop() {
		if NewRing(ids).Len() != len(ids) {
			b.Fatal("shards lost")
		}
	}
}
