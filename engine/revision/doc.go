// Package revision keeps the revisions of each kind: every version of a
// kind folder the operator served, recorded in the cluster so that what
// rendered an object can be named, shown and, later, rendered again.
//
// # Where
//
// A revision is an apps/v1 ControllerRevision (what Kubernetes keeps
// DaemonSet and StatefulSet revisions in) in the operator's state
// namespace, one per kind and folder fingerprint:
//
//	name:        <resource>.<group>-<16 hex digits of sha256(manager, fingerprint)>
//	             (<resource>-<...> for a kind of the core group)
//	labels:      operator.tmplop.io/kind: <resource>.<group> (LabelKind)
//	             app.kubernetes.io/managed-by: <the field manager>
//	annotations: operator.tmplop.io/fingerprint: <the whole fingerprint>
//	revision:    the ordinal, 1 + the highest of the kind's records
//	data:        the folder's files (Encode)
//
// so that `kubectl get controllerrevisions -n <state namespace> -l
// operator.tmplop.io/kind=<resource>.<group>` lists a kind's revisions.
//
// # Responsibilities
//
//   - Ensure finds the record of a folder, or creates it with the next
//     number: numbers say the order in which the kind's folder versions
//     were first served, and a folder served again (a change undone by
//     hand) keeps its number. An unchanged folder costs one list and no
//     write, at every restart. Two replicas that record at once agree: a
//     name taken is read (AlreadyExists); a number two records got at
//     once is kept by the older and given up by the other (checked by a
//     list after every write; writes under resourceVersion
//     preconditions). Nothing else renumbers a record, so that replicas
//     serving different folders (shards during a change) never outbid
//     each other.
//   - Prune keeps the newest records (kind.yaml revisionHistoryLimit, old
//     ones besides the current) and every record the caller says is in
//     use.
//   - Encode and Decode the files: JSON {"files": {name: text},
//     "binaryFiles": {name: base64}}, gzipped over CompressOver; a folder
//     that is larger than MaxData even so is recorded without its files
//     (Revision.FilesOmitted), so that the kind runs and its objects still
//     name their revision, which then cannot be rendered again.
//
// # Place in the flow
//
// engine/controller calls Ensure when a kind starts with a folder (or
// restarts with a changed one), on every replica that reconciles it, after
// the API server serves the kind and before the first reconcile; the
// reconciler writes the number in each object's status.observedRevision
// (engine/status). A staged rollout (docs/rollout.md) will pin objects to
// a record by its name and render them with Decode's files.
package revision
