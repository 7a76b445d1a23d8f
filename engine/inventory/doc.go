// Package inventory keeps, in the cluster, the kinds of children each kind
// of parent has ever applied: the scope of pruning and of the finalizer.
//
//	reconcile: render -> inventory.Record (this package) -> apply -> prune
//	  over inventory.ChildKinds
//
// # Responsibilities
//
//   - Record a child kind before the first child of that kind is applied,
//     so that a crash between the apply and the record can never hide a
//     child from pruning.
//   - Answer, after a restart or a template edit, every kind of child the
//     parents of a kind may still have, including kinds the templates no
//     longer render: those are the children to prune.
//   - Write rarely: one record per (parent kind, child kind) pair in the
//     life of the cluster, whatever the number of objects. The record is
//     one ConfigMap, one key per pair, and a write only ever adds keys (a
//     JSON merge patch), so replicas and kinds never undo each other's.
//
// Why not on each parent, as KEP-3659's ApplySet parent annotations do: that
// is a write to every parent (N writes where this is one per pair), to
// objects the tenant owns, and for built-in kinds such as Namespaces to
// objects the operator should not touch at all.
package inventory
