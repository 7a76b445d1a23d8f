// Package plan is the dry-run engine: what a reconcile of each object of a
// kind would do to the cluster, computed without a write. `operator plan`
// is its face (cmd/operator/app/plan.go); docs/plan.md tells the figures.
//
//	objects (listed live) -> render + adopt (reconcile.MakePlan, the
//	  operator's policy: same labels, same hash)
//	-> each child against the live children (listed once per child kind):
//	  unchanged (hash and apply.Contains, as the operator skips it)
//	  | created / changed: server-side apply with dryRun=All, as the
//	    operator's field manager, forced, compared with the live object
//	  | pruned: a live child of the parent no template renders any more
//	-> the status a reconcile would write (reconcile.Preview), compared
//	  with the live status
//
// # Responsibilities
//
//   - Make no write. The only requests are gets and lists, and applies
//     with dryRun=All, which the API server runs through admission and
//     validation and then drops (apiserver_request_total counts them with
//     dry_run="All").
//   - Agree with the operator: the same render, the same ownership policy
//     (kind.yaml's bounds, the field manager's labels), the same skip of an
//     unchanged child, the same prune scope (the inventory's child kinds
//     and the planned ones; children kept by prune: disabled or the
//     format's keep policy stay). What a plan calls changed, a reconcile
//     writes, and the other way round (test/plan).
//   - Report, never fail the batch: an object whose render fails, or whose
//     child the API server refuses, carries its error and the others are
//     planned.
//   - Degrade for a read-only identity: a dry-run apply needs the rights of
//     the apply (patch, create). When the API server forbids it, the child
//     is compared locally (the rendered fields merged over the live
//     object) and marked Local.
//
// # What it does not do
//
// It does not run the deletion guard (a prune a reconcile would hold back
// is still listed as pruned), the delete steps of a deletion, or the
// ordering waits of dependsOn (a child that would wait is planned as if
// its dependencies were ready). A template that renders differently each
// time is planned as changed; the operator leaves such a child alone
// after its first apply (reconcile's unstable check), and says so.
package plan
