package chart

import "strings"

// ResourcePolicyAnnotation is Helm's resource policy: with the value
// "keep", helm uninstall leaves the object in the cluster, and so does a
// helm upgrade that no longer renders it (helm.sh/helm/v3 pkg/kube
// ResourcePolicyAnno).
const ResourcePolicyAnnotation = "helm.sh/resource-policy"

// Keep reports whether an object with these annotations is one that Helm
// never deletes: helm.sh/resource-policy: keep. The value is read as helm
// uninstall reads a manifest's (pkg/action filterManifestsToKeep: trimmed,
// in any case); helm upgrade compares the live object's value with "keep"
// exactly, and a value it would not keep is kept here too, which errs on
// the side of deleting nothing. Any other value deletes the object, as
// helm upgrade's prune does (helm uninstall leaves an object with an
// unknown policy too, without reporting it kept: a quirk not copied).
func Keep(ann map[string]string) bool {
	v, ok := ann[ResourcePolicyAnnotation]
	return ok && strings.EqualFold(strings.TrimSpace(v), "keep")
}
