package ownership

import (
	"fmt"
	"slices"
)

// Bounds are where the operator may write (and read) for any kind, whatever
// its folder allows: they come from how the operator runs, not from
// kind.yaml, so no folder can widen them.
type Bounds struct {
	// Namespace is the only namespace the operator watches (run
	// --namespace); "" for all. The watches of children cover only it, so
	// a child anywhere else would always look free: applied with force, it
	// would take over an existing object there, and finalize would later
	// delete it.
	Namespace string
	// Protected are the operator's own namespaces: where its kind folders
	// (ConfigMaps), its records and its Lease live. A child written there
	// could be a new kind folder, or overwrite the operator's state, so no
	// child may be written there and no lookup may read there.
	Protected []string
}

// Check returns why no object of namespace may be written or read, or nil.
// namespace "" (a cluster-scoped object, or all namespaces for a list) is
// the caller's to judge.
func (b Bounds) Check(namespace string) error {
	if namespace == "" {
		return nil
	}
	if slices.Contains(b.Protected, namespace) {
		return &OutsideError{Reason: fmt.Sprintf("namespace %q is the operator's own (its kind folders, records and Lease): no kind may write or read there", namespace)}
	}
	if b.Namespace != "" && namespace != b.Namespace {
		return &OutsideError{Reason: fmt.Sprintf("namespace %q is outside the namespace the operator watches (run --namespace %s), where it cannot see what it would take over", namespace, b.Namespace)}
	}
	return nil
}

// checkNamespaceObject refuses a Namespace object that is one of the
// operator's own: relabelling it (Pod Security, say) would reach into the
// operator's namespace as surely as a child written inside it.
func (b Bounds) checkNamespaceObject(kind, group, name string) error {
	if kind == "Namespace" && group == "" && slices.Contains(b.Protected, name) {
		return &OutsideError{Reason: fmt.Sprintf("Namespace %q is the operator's own: no kind may write it", name)}
	}
	return nil
}
