// Package controller runs the kinds: for each one a dynamic informer, a
// rate-limited workqueue and workers that call the reconciler, and, shared by
// all kinds, the watches of the children they apply and of the objects their
// templates look up.
//
//	event -> queue (this package) -> load object from the cache
//	  -> reconcile (render -> apply -> observe -> status)
//	  -> requeue decision (this package)
//
// # Responsibilities
//
//   - Start and stop a kind at runtime (Manager.Start, Manager.Stop): a kind
//     whose CRD is not installed yet waits for it, with backoff, without
//     holding up the others.
//   - Enqueue on create, on a generation change, on label, annotation or
//     deletion changes; never on a status-only change, so the operator's own
//     status write does not reconcile again.
//   - Handlers only enqueue keys; workers read the object from the cache and
//     deep-copy it before the reconciler sees it.
//   - Decide every requeue in one place: a template's requeueAfter, a
//     rate-limited retry after a transient failure, none after a terminal
//     one. A panic in one reconcile is recovered and retried, never fatal.
//   - Watch children (one informer per child resource, filtered by the
//     managed-by label, started the first time a kind applies that
//     resource) and map each child event back to its parent.
//   - Serve lookups from informer caches, confined to what kind.yaml
//     declares, and re-reconcile the parents that read an object when it
//     changes.
package controller
