// Package apply puts a parent's rendered children into the cluster and
// removes the ones it no longer renders:
//
//	render -> ownership -> apply (this package) -> observe -> status
//
// # Responsibilities
//
//   - Server-side apply each child through the kind's kube.Client, and skip
//     the write when the watched child already holds what would be applied
//     (the same rendered content as the last apply, and every rendered field
//     still at its value): at rest the operator writes nothing.
//   - Prune: delete the children that carry this parent's identity and this
//     operator's manager label but were not rendered this time. It is only
//     ever called after a render and every apply succeeded, so a broken
//     template never deletes a running application.
//
// Deciding what the children are, and whether to call Prune at all, belongs
// to the reconcile package.
package apply
