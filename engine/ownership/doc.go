// Package ownership decides what makes a child object ours, between render
// and apply:
//
//	render -> ownership (this package): adopt each manifest -> apply
//
// # Responsibilities
//
//   - Give every child the parent's namespace when it is namespaced and has
//     none.
//   - Refuse children outside the parent's namespace, cluster-scoped
//     children, and every child of a cluster-scoped parent (which has no
//     namespace of its own), unless the kind opted in: a user who may only
//     create a custom resource in namespace A must never get the operator
//     to write into namespace B.
//   - Hold the operator's own bounds whatever a kind allows (Bounds): no
//     child in the operator's own namespace, where its kind folders and
//     records live (a folder must not write folders), and none outside the
//     namespace it watches (run --namespace), where it could not see what
//     it would take over.
//   - Decide whether a parent may apply over an object that already holds
//     a child's name (Claim): only when the object names the parent, because
//     the operator made it or its owner consented to the adoption; an
//     object Helm made, only when the kind accepts Helm releases too.
//   - Add a controller ownerReference to the parent where Kubernetes allows
//     one (same namespace, or a cluster-scoped parent), so that deleting the
//     parent is garbage collection; none to a child the kind keeps (a
//     chart's helm.sh/resource-policy: keep), which outlives the parent.
//   - Label every child with the managing operator and the parent's UID,
//     and annotate it with the parent's identity and its template file.
//     Watches select children by the labels, map events back to the parent
//     by the annotation, and prune only what carries both labels.
//   - Say what the caches keep of an object they must know but not read
//     (StubMeta): what claims, pruning and the skip decisions read of it,
//     bounded whatever the object holds, since anyone may create one.
//
// Everything here is pure: the scope of a kind comes from the caller (a
// RESTMapper when running, a static table offline), so `operator render`
// shows exactly the defaults that `operator run` applies.
package ownership
