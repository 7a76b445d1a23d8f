// Package rbac derives, without a cluster, the least-privilege RBAC that
// the operator needs to serve exactly a set of kind folders: what
// `operator rbac --templates DIR` prints (docs/rbac.md).
//
//	folders (catalog) -> Kind.ChildKinds: the kinds each child template can
//	                     render, read from its parse tree by the folder's model
//	                  -> Resources: kind -> resource (client-go's scheme for
//	                     built-in kinds, --crds for custom ones)
//	                  -> Objects: ClusterRoles, Roles, bindings and
//	                     ServiceAccounts -> YAML
//
// The verbs follow the cluster calls of the engine: the watched kind is
// listed, watched, read and patched (finalizer, annotation), its status and
// finalizers subresources written; children are watched, applied (create,
// patch) and pruned (delete); lookups are read; the operator's own records
// (inventory ConfigMap, folder ConfigMaps, leader Lease) live in its
// namespace and need a Role only; Events go to the objects' namespaces.
//
// A folder whose kind.yaml names a serviceAccountName makes every call of
// its kind as that ServiceAccount: its rules go to a ClusterRole of its own
// bound to that account, the operator gets impersonate on that account
// alone, and keeps only the reads of the kind's children, whose watches are
// shared by every kind and run as the operator. Under a default account
// (run --default-service-account) every other folder gets an account of
// its own the same way (KindAccount, annotated to serve its kind, which is
// how run finds it), and the default account gets none of any folder's
// rules: a folder added later runs as it and can do nothing.
//
// Child kinds are found statically (engine/catalog/childkinds, through
// catalog.Kind.ChildKinds): every path through the
// template (both branches of if and with, a range body any number of times,
// helpers called by include or template with a literal name) is followed
// over a small state (the current line, the current document's apiVersion
// and kind), and the output is split into documents at --- lines as the
// render splits it. A manifest whose apiVersion or kind comes from an action
// is an error naming its file and line, unless kind.yaml's children
// declares the kinds.
//
// The output is deterministic: rules, groups, resources and verbs are
// sorted, and nothing depends on a cluster or the time.
package rbac
