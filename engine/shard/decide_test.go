package shard

import (
	"fmt"
	"testing"
)

// keyOwnedBy is a key that ring gives to id.
func keyOwnedBy(t *testing.T, ring *Ring, id string) string {
	t.Helper()
	for i := range 10_000 {
		if k := Key("example.com", "Widget", "ns", fmt.Sprintf("w-%d", i)); ring.Owner(k) == id {
			return k
		}
	}
	t.Fatalf("no key of %s in 10,000", id)
	return ""
}

func TestDecide(t *testing.T) {
	// a, b and c are live and on the ring; d is dead (its Lease expired or
	// was released); "" is a sharder that holds no shard.
	ring := NewRing([]string{"a", "b", "c"})
	ofA, ofB := keyOwnedBy(t, ring, "a"), keyOwnedBy(t, ring, "b")
	// stale is a ring that still has d: built before d's Lease expired.
	stale := NewRing([]string{"a", "b", "c", "d"})
	ofDOnStale := keyOwnedBy(t, stale, "d")

	cases := []struct {
		name string
		obj  Object
		ring *Ring
		self string
		want Action
	}{
		// New objects: the sharder assigns; nobody else has seen them.
		{name: "unassigned: assigned to its owner", obj: Object{Key: ofA}, self: "", want: Action{Assign, "a"}},
		{name: "unassigned, seen by a shard: the same answer, the sharder's to do", obj: Object{Key: ofA}, self: "b", want: Action{Assign, "a"}},
		{name: "unassigned and already being deleted: assigned, for its finalizer", obj: Object{Key: ofA, Deleting: true}, self: "", want: Action{Assign, "a"}},

		// Where they belong: nothing, whoever asks.
		{name: "on its owner, asked by the owner", obj: Object{Key: ofA, Shard: "a"}, self: "a", want: Action{Verb: Keep}},
		{name: "on its owner, asked by another shard", obj: Object{Key: ofA, Shard: "a"}, self: "b", want: Action{Verb: Keep}},
		{name: "on its owner, asked by the sharder", obj: Object{Key: ofA, Shard: "a"}, self: "", want: Action{Verb: Keep}},

		// A join or a new ring: the live holder hands over, nobody else.
		{name: "held by self, owned by another: handed over", obj: Object{Key: ofA, Shard: "b"}, self: "b", want: Action{HandOver, "a"}},
		{name: "held by a live shard, asked by the new owner: the holder's move", obj: Object{Key: ofA, Shard: "b"}, self: "a", want: Action{Verb: Keep}},
		{name: "held by a live shard, asked by a third shard", obj: Object{Key: ofA, Shard: "b"}, self: "c", want: Action{Verb: Keep}},
		{name: "held by a live shard, asked by the sharder: never taken from a live holder", obj: Object{Key: ofA, Shard: "b"}, self: "", want: Action{Verb: Keep}},
		{name: "held by self while being deleted: finished where it is", obj: Object{Key: ofA, Shard: "b", Deleting: true}, self: "b", want: Action{Verb: Keep}},

		// A shard lost: the sharder reassigns (after Members.Dead).
		{name: "held by a dead shard: reassigned to its owner", obj: Object{Key: ofB, Shard: "d"}, self: "", want: Action{Assign, "b"}},
		{name: "held by a dead shard, asked by that shard: no hand-over from a dead shard", obj: Object{Key: ofB, Shard: "d"}, self: "d", want: Action{Assign, "b"}},
		{name: "held by a dead shard while being deleted: reassigned, for its finalizer", obj: Object{Key: ofB, Shard: "d", Deleting: true}, self: "", want: Action{Assign, "b"}},
		{name: "labelled with no shard that ever was", obj: Object{Key: ofB, Shard: "nobody"}, self: "", want: Action{Assign, "b"}},

		// Nowhere to go.
		{name: "empty ring: unassigned stays so", obj: Object{Key: ofA}, ring: NewRing(nil), self: "", want: Action{Verb: Keep}},
		{name: "empty ring: a dead shard's object stays", obj: Object{Key: ofA, Shard: "d"}, ring: NewRing(nil), self: "", want: Action{Verb: Keep}},
		{name: "stale ring names a dead owner: wait for the next ring", obj: Object{Key: ofDOnStale}, ring: stale, self: "", want: Action{Verb: Keep}},
		{name: "stale ring names a dead owner: no hand-over to it", obj: Object{Key: ofDOnStale, Shard: "a"}, ring: stale, self: "a", want: Action{Verb: Keep}},
	}
	live := func(id string) bool { return id == "a" || id == "b" || id == "c" }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.ring
			if r == nil {
				r = ring
			}
			if got := Decide(tc.obj, r, live, tc.self); got != tc.want {
				t.Errorf("Decide(%+v, self %q) = %v %q; want %v %q", tc.obj, tc.self, got.Verb, got.To, tc.want.Verb, tc.want.To)
			}
		})
	}
}

// TestDecideNeverOverlaps asks every party about every kind of object: at
// most one party has a write to make (the sharder for Assign, the holder
// for HandOver), Assign never takes an object from a live holder, and
// HandOver comes only from the holder.
func TestDecideNeverOverlaps(t *testing.T) {
	ring := NewRing([]string{"a", "b", "c"})
	live := ring.Has
	parties := []string{"", "a", "b", "c", "d"} // "" the sharder, d dead
	for i := range 2_000 {
		for _, holder := range []string{"", "a", "b", "c", "d"} {
			for _, deleting := range []bool{false, true} {
				obj := Object{Key: fmt.Sprintf("g/K/ns/o-%d", i), Shard: holder, Deleting: deleting}
				writers := 0
				for _, self := range parties {
					a := Decide(obj, ring, live, self)
					switch a.Verb {
					case Assign:
						if live(holder) {
							t.Fatalf("Decide(%+v, %q) = Assign %s: taken from a live holder", obj, self, a.To)
						}
						if self == "" {
							writers++ // the sharder is the one that assigns
						}
					case HandOver:
						if self != holder || !live(self) {
							t.Fatalf("Decide(%+v, %q) = HandOver %s: not from the live holder", obj, self, a.To)
						}
						writers++
					}
					if a.Verb != Keep && (a.To == holder || !live(a.To)) {
						t.Fatalf("Decide(%+v, %q) = %v to %q: not a move to a live shard", obj, self, a.Verb, a.To)
					}
				}
				if writers > 1 {
					t.Fatalf("%+v: %d parties would write", obj, writers)
				}
				if want := ring.Owner(obj.Key); !deleting && (holder != want) && writers != 1 {
					t.Fatalf("%+v: owner is %s but nobody moves it", obj, want)
				}
			}
		}
	}
}
