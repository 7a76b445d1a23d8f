package catalog

// OwnerAPIVersion is the apiVersion the controller reference of every
// child of the kind names: the first served version of Versions, which is
// kind.yaml's order (the oldest first, when new versions are appended), not
// the hub. The garbage collector resolves a reference at any served
// version; a reference that followed the hub would be rewritten on every
// child when a new version becomes the hub, so one that stays put is what
// lets a kind move to a new version with no child written
// (docs/versions.md). A kind of one version names it.
func (k *Kind) OwnerAPIVersion() string {
	for _, v := range k.Versions() {
		if v.Served {
			return k.GVK.GroupKind().WithVersion(v.Name).GroupVersion().String()
		}
	}
	return k.Spec.APIVersion
}
