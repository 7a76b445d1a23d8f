// Package reconcile brings one object to the state its templates describe.
// It is called by a controller worker with an object from the informer
// cache, and runs the pipeline once:
//
//	lookups, render children, adopt (plan.go)
//	-> record kinds (inventory), claim names (claim.go) -> apply in
//	dependency order, judging each child's health (apply_step.go) ->
//	prune with the deletion guard (prune.go) -> readiness conditions,
//	status.yaml, one status write (status_step.go)
//
// Reconcile (reconcile.go) reads as those steps; each is a function of its
// own file that takes what the step before produced (a trip), as kro's
// runtime does.
//
// # Responsibilities
//
//   - Plan: render the children and adopt them (namespace, owner reference,
//     labels). Plan is pure given a scope function, and is what
//     `operator render` prints, so the CLI shows exactly what run applies.
//   - Apply nothing if any template fails or any child's name is taken by
//     an object that is not the parent's; prune only after every apply
//     succeeded, over every kind the parent's kind has ever applied, and
//     hold back a prune that would destroy most of what the parent has
//     until a second render agrees; never delete on a guess.
//   - Leave alone a child that renders differently from the same input,
//     and say so, instead of writing it on every reconcile.
//   - Report every failure as the Reconciled condition and a Warning Event
//     on the object, and classify it for the controller in one place
//     (classify): only known-permanent causes are terminal.
//   - Keep nothing between reconciles: every reconcile runs every step, and
//     decides from the object it is given and the watched children. What
//     is up to date costs no write. The object is given at least as new as
//     the reconciler's own last write of it (ParentWrites: the caller's
//     part, engine/controller's ownWrites).
//   - Say whether the object is up (docs/readiness.md): Ready from the
//     children's health, judged from the objects the reconcile holds, never
//     fetched; Reconciling while children progress or wait; Stalled for
//     what classify calls terminal and for a child that failed. A child's
//     status change wakes its parent, whose reconcile judges health again
//     and writes only a status that changed.
//   - Apply children in order: CRDs and Namespaces first, then each
//     template after those it dependsOn; a child waits (not applied, not
//     pruned) until what it depends on is Current. The order and the
//     waits (Gate) and the deletion guard's decision (Guard) are exported
//     as such, so that operator plan decides as the reconcile does.
//   - Write the parent's metadata only where needed (the finalizer for
//     children outside its namespace, the prune-hold record), always with
//     its UID as a precondition; never write the status of built-in kinds.
//   - Children outside the namespace are deleted before their parent goes,
//     and found again if the parent vanished anyway (verifyParent, Sweep).
//   - Ask the kind, never its format: what a folder's format adds (a
//     chart's hooks: apply order, children recreated, kept or done, the
//     records in the status, the delete steps around the deletion of the
//     children in delete_steps.go, which Helm releases it takes over) is
//     a method of catalog.Kind. Nothing here branches on the format.
package reconcile
