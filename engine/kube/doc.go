// Package kube is the one door from the engine to the API server. Every
// cluster call of the engine and of each kind (mapping kinds to resources,
// live reads and lists, server-side apply of children and status, deletes,
// the informers' lists and watches, the inventory's ConfigMap, the
// conversion webhook's Secret (secrets.go), the kinds' ServiceAccounts,
// the CRD installer's calls, the shard labels) goes through a method of a
// Client, whose clients are private: no caller gets a dynamic, metadata or
// typed client to call around it. A kind that
// impersonates its ServiceAccount has a Client of its own (Impersonating):
// its identity is one field of the door, and the pipeline does not change.
//
// # Responsibilities
//
//   - Map kinds to resources and scopes through a RESTMapper over cached
//     discovery, reset on a miss (at most every 10 s) so that a CRD
//     installed after start-up is found, for every caller; plurals are
//     never guessed. A caller that names a resource itself (the CRD
//     installer: the CRD API, and a CRD's own plural) passes the mapping
//     it made, and no discovery is asked.
//   - Server-side apply with one field manager, forcing ownership of the
//     fields the operator renders; every other write (patches, creates,
//     the shard labels) as the same field manager; deletes with a UID
//     precondition.
//   - Mark every error the API server answers with what retrying it can
//     do (marks.go, engine/requeue), so that reconcile's classify reads a
//     refusal the same wherever it came from: a Forbidden on the
//     inventory is terminal as on a child's apply.
//   - List and watch for the informers: whole objects compact
//     (engine/cached), or their metadata only.
//   - Hold the typed client of the core group only, never the whole
//     clientset (core.go), and the authorization group's
//     SelfSubjectAccessReviews: whether the client's own identity may make
//     a request (Allowed), asked before a kind starts.
//   - Be made of fakes for unit tests (NewForClients): a fake dynamic
//     client serves the informers too.
//   - Offline, tell the scope of well-known kinds without a cluster, for
//     `operator render`.
//
// # Side doors
//
// What does not go through a Client's methods, each for its reason; none
// of them is a call a reconcile makes or a failure classify reads.
//
//   - Client.EventSink: the sink of client-go's Event broadcaster
//     (tools/record), on the Client's core group client. The broadcaster
//     makes the calls and judges their errors itself, by their type: a
//     *StatusError is dropped, anything else retried 12 times, 10 s apart.
//     So its errors are the API server's, unmarked: a Forbidden wrapped in
//     a mark would be retried as a network failure.
//   - The Leases: the leader election's (cmd/operator/app/leader.go) and
//     the shards' and their ring's (cmd/operator/app/sharding.go, through
//     engine/shard's Join and Members), each a typed coordination/v1
//     client built from the rest config with a user agent of its own
//     ("leader-election", "sharding"), as Kubernetes' own components
//     build theirs. client-go's leaderelection takes a typed LeasesGetter
//     and makes and judges its calls itself; a Lease is the process's, not
//     a kind's (no mapping, no impersonation), and is released after the
//     engine's drain. Their errors end the election or the shard, or are
//     logged and tried again by the loop that made them (Members.Dead,
//     Collect); no reconcile reads them, so they carry no mark. The ring's
//     Lease informer (Members) is the one informer outside the
//     controller's watch set that lists through them.
//   - The metrics server's TokenReview and SubjectAccessReview clients
//     (engine/metrics): who may scrape, not a call of the engine.
//
// The sharder's informer of a kind's unassigned objects (engine/shard's
// Sharder) lists and watches through the door (ListMetadata,
// WatchMetadata) but is not one of the controller's watch set: see
// engine/controller's watchSet for why.
package kube
