// Package rollout moves a kind's objects from one revision of its folder
// to another in steps, each step only once every object of the one before
// is Ready, halting when one goes Stalled or its step outlives its
// deadline.
//
//	folder change -> revision (engine/revision) -> rollout.New (this
//	  package) -> rollout.Assign per object (which revision renders it) ->
//	  reconcile -> status (observedRevision, Ready) -> rollout.Advance
//
// # Responsibilities
//
//   - Spec: kind.yaml's rollout: all (every object at once, the default)
//     or steps (a count or a percentage each, canaries first by a label
//     selector) with a deadline per step.
//   - Order: a stable order of the kind's objects (canaries, then a hash
//     of namespace/name), so that every replica, and the same replica
//     after a restart, puts the same objects in the same step; a step is
//     a cutoff in that order, which only ever grows, so an object never
//     goes back to the old revision by a step, whatever objects come and
//     go.
//   - State: the rollout of a kind (from, to, step, cutoff, phase),
//     kept in the cluster on the record of the revision it rolls out to
//     (annotation and labels of the ControllerRevision): nothing of it
//     lives only in a process, so a restart, another replica or a shard
//     serves each object with the revision the state gives it.
//   - Advance: the pure decision of the next state from the objects'
//     statuses and the clock.
//
// Reading and writing the state, serving two revisions at once and the
// Events are engine/controller's; `operator rollout` (cmd) drives a
// rollout by the same state.
package rollout
