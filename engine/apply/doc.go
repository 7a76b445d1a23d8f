// Package apply puts a parent's rendered children into the cluster and
// removes the ones it no longer renders:
//
//	render -> ownership -> apply (this package) -> observe -> status
//
// # Responsibilities
//
//   - Check each child against the object that holds its name before
//     anything is applied (Prepare): the name must be free or the object
//     the parent's (ownership.Claim), read from the watches of our children
//     and of every other object's metadata, so the check costs no request
//     (but for a child the cache keeps as metadata only, read live: Cache).
//   - Server-side apply each child through the kind's kube.Client, with the
//     live object's UID as a precondition, and skip the write when the
//     watched child already holds what would be applied: at rest the
//     operator writes nothing.
//   - Key children by group and resource, never by version: one object
//     served at two versions is one child.
//   - Tell the echo of our own writes from other changes (OwnEvent), so
//     that the parent is not reconciled again by what it just did.
//   - List a parent's children for pruning and delete them with UID
//     preconditions (Owned, Delete); list the unowned ones for the orphan
//     sweep (Unowned).
//
// Deciding what the children are, whether to prune and what, belongs to
// the reconcile package.
package apply
