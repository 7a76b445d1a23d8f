package shard

// Verb is what Decide asks for.
type Verb uint8

const (
	// Keep: nothing to write.
	Keep Verb = iota
	// Assign: the elected sharder labels the object for Action.To. The
	// object is unassigned, or its shard is not live: before it moves an
	// object away from a shard, the sharder confirms that shard dead
	// (Members.Dead), once per shard.
	Assign
	// HandOver: the holder (self) first stops reconciling the object (the
	// worker that would reconcile it is the one that hands it over), then
	// labels it for Action.To itself. The new holder sees the label only
	// after the old one stopped: the drain handshake is the write itself.
	HandOver
)

func (v Verb) String() string {
	switch v {
	case Keep:
		return "Keep"
	case Assign:
		return "Assign"
	case HandOver:
		return "HandOver"
	}
	return "Verb(?)"
}

// Action is Decide's answer.
type Action struct {
	Verb Verb
	// To is the shard the object goes to, for Assign and HandOver.
	To string
}

// Object is what Decide needs to know of an object.
type Object struct {
	// Key is its ring key (Key).
	Key string
	// Shard is its ShardLabel's value, "" when it has none.
	Shard string
	// Deleting is true once it has a deletionTimestamp.
	Deleting bool
}

// Decide is what self (a shard id, or "" for a sharder that holds no shard)
// does about obj, given the ring of the live shards and live, which tells
// whether a shard's Lease is live (ring.Has, when the ring is the live
// set). The sharder and every shard call it on the same facts and get
// answers that never overlap: Assign only when no live shard holds the
// object (the sharder's), HandOver only to the live holder itself.
//
// An object held by a live shard stays there while it is being deleted:
// its finalizer runs where it is, not after a move.
func Decide(obj Object, ring *Ring, live func(id string) bool, self string) Action {
	want := ring.Owner(obj.Key)
	if want == "" || !live(want) {
		// No live shard on the ring, or a ring older than the live set:
		// wait for the next ring rather than write towards a dead shard.
		return Action{Verb: Keep}
	}
	if obj.Shard == "" || !live(obj.Shard) {
		return Action{Verb: Assign, To: want}
	}
	if obj.Shard == want || obj.Deleting || obj.Shard != self {
		// Where it belongs; or finishing its deletion where it is; or
		// held by another live shard, whose move it is.
		return Action{Verb: Keep}
	}
	return Action{Verb: HandOver, To: want}
}
