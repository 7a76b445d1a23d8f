// Package kube is the one door from the engine to the API server. Every
// cluster call of the engine and of each kind (mapping kinds to resources,
// live reads and lists, server-side apply of children and status, deletes,
// the informers' lists and watches, the core group's ConfigMaps,
// ServiceAccounts and Events) goes through a Client, whose clients are
// private. A kind that impersonates its ServiceAccount has a Client of its
// own (Impersonating): its identity is one field of the door, and the
// pipeline does not change.
//
// # Responsibilities
//
//   - Map kinds to resources and scopes through a RESTMapper over cached
//     discovery, reset on a miss (at most every 10 s) so that a CRD
//     installed after start-up is found, for every caller; plurals are
//     never guessed.
//   - Server-side apply with one field manager, forcing ownership of the
//     fields the operator renders; deletes with a UID precondition.
//   - List and watch for the informers: whole objects compact
//     (engine/cached), or their metadata only.
//   - Hold the typed client of the core group only, never the whole
//     clientset (see Client.Core), and the authorization group's
//     SelfSubjectAccessReviews: whether the client's own identity may make
//     a request (Allowed), asked before a kind starts.
//   - Be made of fakes for unit tests (NewForClients): a fake dynamic
//     client serves the informers too.
//   - Offline, tell the scope of well-known kinds without a cluster, for
//     `operator render`.
//
// Built from the rest config elsewhere, on purpose: the leader election's
// coordination client (cmd/operator/app/leader.go: the process's Lease,
// with its own user agent, which outlives the engine's drain) and the
// metrics server's TokenReview and SubjectAccessReview clients
// (engine/metrics: who may scrape, not a call of the engine).
package kube
