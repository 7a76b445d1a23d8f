// Package crdinstall installs the CRD of a kind folder (`run
// --install-crds`): the folder's crd.yaml, or the CRD engine/crd generates
// from kind.yaml's short schema. It sits between the catalog (a loaded
// folder) and the controller, which calls Install before a kind starts or
// restarts; an error of Install counts as a folder that failed to load, so
// the kind's last good version goes on serving and a new folder does not
// start.
//
// # Responsibilities
//
// A folder's author need not be the cluster's administrator (a ConfigMap
// folder, a shared templates repository), while the operator holds the
// right to create and patch CRDs. So the package installs only what
// belongs to the folder, and never what would break stored objects:
//
//   - Groups (groups.go): no CRD of a Kubernetes group ("" and the other
//     groups without a dot, *.k8s.io, *.kubernetes.io) or of the SIG
//     projects' *.x-k8s.io, whatever kind.yaml or crd.yaml says.
//   - Ownership (owner.go): no change to a CRD this operator did not
//     create, told by its managedFields (a server-side apply entry of the
//     operator's field manager); another project's CRD is left to it.
//   - Stored data (check.go): no change that drops a version still served
//     or stored, or removes from a version's schema a field that a stored
//     object sets. A removed field is not an error the API server reports:
//     it prunes the field from every object it reads, at once, so an
//     object's spec silently loses it (kro#186 is the bug of a tool that did
//     not check).
//
// # Workflow
//
// Install, for one folder (install.go): make the folder's CRD; refuse a
// reserved group; check that it is the CRD of the folder's kind; read the
// live CRD; refuse it unless it is the operator's; Check the change against
// the stored objects; apply with server-side apply, not forced (an update
// under the precondition of the resourceVersion read; a create withdrawn
// when its answer shows that someone else created the CRD meanwhile); wait
// until it is Established.
package crdinstall
