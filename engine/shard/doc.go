// Package shard spreads the objects of a kind over several replicas of the
// operator: each replica holds a Lease of its own (a shard), a consistent
// hash ring over the live shards names the owner of every object, and the
// assignment is a label on the object. Kubernetes is the only store: no
// consensus of our own, nothing beside Leases and labels.
//
//	Join (lease.go) ---- one Lease per replica, renewed; Context ends when it is not
//	Members (members.go) - the ring's Leases, watched -> Ring of the live shards
//	Ring (ring.go) ------ key -> owner, 1024 tokens a shard
//	Decide (decide.go) -- (label, ring, self) -> keep, assign, hand over
//	AssignPatch (labels.go): the one label write, with a resourceVersion precondition
//	Sharder (sharder.go): the elected sharder's loop over one kind's Resource (resource.go)
//	HandOverTo (resource.go): the holder's write of a move
//
// # Responsibilities
//
//   - Hold this replica's Lease, <ring>-shard-<id> in the operator's
//     namespace, renewed every RetryPeriod as client-go's leader election
//     renews; end the shard's Context when renewals have failed for
//     RenewDeadline, or at once when another process wrote or deleted the
//     Lease, so that the replica stops reconciling before any observer can
//     see its Lease expire (RenewDeadline < LeaseDuration). Stop releases
//     the Lease and deletes it.
//   - Tell the live shards: a Lease is live while its holder is set and
//     less than its leaseDuration has passed since this process saw it
//     renewed (client-go's rule: the observer's own clock, never the
//     holder's renewTime, so that clock skew between nodes cannot make a
//     Lease look expired early). Members notifies on every change,
//     including a Lease that silently expires (a timer at the earliest
//     expiry).
//   - Confirm, with a read from the API server, that a shard is dead before
//     its objects are given to others (Members.Dead): the watch may be
//     stale, the server is not.
//   - Name the owner of a key (Ring.Owner) the same way in every replica,
//     whatever order the shards are listed in; move about 1/(n+1) of the
//     keys to a shard that joins and only the lost shard's keys when one
//     goes.
//   - Decide, purely, what one replica does about one object (Decide): the
//     elected sharder assigns unassigned objects and those of dead shards;
//     a live holder hands its object over itself, after it stopped
//     reconciling it. One label write per object per move.
//   - Run the sharder's loop over one kind (Sharder): label the unassigned
//     objects as they come (a watch of the unlabelled ones only), and after
//     every change of the ring move the objects of the shards confirmed
//     dead; never write an object a live shard holds.
//
// # Not here
//
// The watches of parents and children by label, the hand-over in the
// worker, the live read of a child the shard's watch misses, the export of
// the sharder's Stats as metrics and readiness are the controller's
// (engine/controller/sharding.go); the flags, the sharder's election and
// Members.Collect under it are the command's (cmd/operator/app/sharding.go).
//
// # Clients
//
// The objects and children of a kind (MetadataResource) are listed,
// watched and labelled through the kind's kube.Client (Metadata), so that
// their errors are marked as every call of the engine is: a hand-over
// refused as Forbidden is terminal as a child's apply is. The Leases (Join,
// Members) go through a typed coordination/v1 client the command builds, a
// side door that engine/kube's doc names with its reason. Members' informer
// of the Leases and the Sharder's informer of the unassigned objects are
// this package's, outside the controller's watch set (engine/controller's
// watchSet says why).
//
// # Shard ids
//
// A shard id is a DNS label (ID sanitises a pod name into one). Give every
// process an id of its own (the pod name plus a random suffix): an id that
// comes back after a crash would claim the objects still labelled with it
// while the sharder is moving them away, and a stable id saves no moves in
// this protocol (docs/sharding.md, "Shard ids").
package shard
