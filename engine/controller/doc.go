// Package controller runs the kinds: for each one an informer of its
// resource (client-go's, over engine/cached's list and watch), a
// rate-limited workqueue of object names (cache.ObjectName) and workers
// that call the reconciler, and, shared by all kinds, the watches of the
// children they apply and of the objects their templates look up.
//
// Every informer is one of the Manager's watch set (watches.go), keyed by
// resource, namespace, label selector, identity and whether it watches
// metadata only, and counted: the parents of a kind hold theirs while the
// kind runs, the children's while a kind that applied them is served,
// the lookups' while a parent reads them, the ConfigMap folders' until
// the run ends. The last user's release stops it.
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
//   - Enqueue a parent on create, on a generation change, on label,
//     annotation or deletion changes (needsReconcile); never on a change of
//     its status alone, or of the engine's own marks, so that the
//     operator's own writes do not reconcile it again. A child's change,
//     its status included, reconciles its parent.
//   - Handlers only enqueue keys; workers read the object from the cache and
//     deep-copy it before the reconciler sees it; while the watch has not
//     shown the reconciler's own last write of the object, they read what
//     that write returned, and after a write whose outcome is unknown, the
//     API server (ownwrites.go: its one invariant, and a property test).
//   - Decide every requeue in one place: a template's requeueAfter (never
//     under the MinRequeue floor), a rate-limited retry after a transient
//     failure, none (or a slow RetryAfter) after a terminal one. A panic in
//     one reconcile is recovered and retried, never fatal.
//   - Watch children: per group and resource, at its preferred version, one
//     informer of the operator's own children (filtered by the managed-by
//     label) and one of the metadata of every other object (what a child
//     would overwrite); map each child event back to its parent, drop the echo
//     of our own applies, and wake the parents waiting for a taken name.
//     Anyone may write the label: a child is kept whole only when matched to
//     a parent a kind's watch holds, else as a bounded stub of its metadata,
//     and read from the API server when its content is needed
//     (admission.go).
//   - As one shard of a ring (Options.Sharding, run --sharding): watch
//     only the objects labelled with the shard and the children labelled
//     held by it, read live a child name the watches miss (another shard's
//     child, or one that moved), hand an object over from its worker when
//     the ring gives it to another shard (its children first), and run the
//     kind's sharder while this replica is the ring's (sharding.go).
//   - Serve lookups from informer caches, confined to what kind.yaml
//     declares and cut to what is read (the parent's namespace, the
//     lookup's selector), stopped when no parent reads them, and
//     re-reconcile the parents that read an object when it changes.
//   - Record a kind's folder as a revision (engine/revision) once this
//     replica leads and before its first reconcile, retried with backoff
//     while the record cannot be read or written; the leader (or the
//     ring's sharder) prunes past revisionHistoryLimit (revisions.go).
//   - Serve a kind's objects filtered by its kind.yaml selector; for kinds
//     with children outside their objects' namespaces, sweep for orphans.
//   - Load kind folders from a directory and from ConfigMaps, one folder
//     per kind: a kind once served is never taken by another folder
//     (KindConflictError). Give each kind its identity: the ServiceAccount
//     its folder names, if that account agrees (AnnotationServes), else,
//     under a default account, the one account that agrees to serve the
//     kind, else the default one; start a kind only if its account may
//     list and watch it (AccessError, asked of the API server as the
//     account); and its bounds (no child or lookup in the operator's own
//     namespaces, nor outside --namespace), which no folder can widen.
package controller
