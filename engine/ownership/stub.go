package ownership

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The longest value a stub keeps of a string it reads. Nothing bounds an
// annotation's value but the annotations' 256 KiB, nor an owner
// reference's fields but the object's size; the values a stub is read for
// are far shorter: a parent is Kind.group/namespace/name (at most 634
// bytes under the API server's name rules), a hash 22, a Helm release's
// name and namespace and an owner's apiVersion, kind and name at most 317.
// A longer value is cut, and so still equals no legitimate one.
const (
	maxStubValue = 1024
	// maxStubTemplate is a template's path in its folder: at most
	// PATH_MAX.
	maxStubTemplate = 4096
)

// stubAnnotations are the annotations read of an object that holds a
// child's name: by Claim (the parent it names, Helm's release), by pruning
// (the opt-out, the template for the deletion guard, the parent for the
// sweep) and by the skip decisions (the hash).
var stubAnnotations = []string{
	AnnotationParent, AnnotationTemplate, AnnotationPrune, AnnotationHash,
	AnnotationHelmReleaseName, AnnotationHelmReleaseNamespace,
}

// stubLabels are the labels read of such an object: whose it is, and the
// parent whose children it is counted with.
var stubLabels = []string{LabelManagedBy, LabelParentUID}

// StubMeta is what a stub keeps of an object's metadata: what Claim,
// pruning and the skip decisions read of an object that holds a child's
// name, and nothing else. Its size is bounded whatever the object holds
// (a few hundred bytes, 13 KiB at most): only the labels and annotations
// read, each value cut at maxStubValue, and only the controller's owner
// reference. The watches keep so the objects anyone may create, whose
// labels and annotations they choose.
func StubMeta(m metav1.Object) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
		ResourceVersion: m.GetResourceVersion(), Generation: m.GetGeneration(),
		DeletionTimestamp: m.GetDeletionTimestamp(),
	}
	if c := metav1.GetControllerOfNoCopy(m); c != nil {
		ref := *c
		ref.APIVersion, ref.Kind, ref.Name = bounded(ref.APIVersion, maxStubValue), bounded(ref.Kind, maxStubValue), bounded(ref.Name, maxStubValue)
		ref.UID = types.UID(bounded(string(ref.UID), maxStubValue))
		out.OwnerReferences = []metav1.OwnerReference{ref}
	}
	out.Labels = pick(m.GetLabels(), stubLabels, func(string) int { return maxStubValue })
	out.Annotations = pick(m.GetAnnotations(), stubAnnotations, func(k string) int {
		if k == AnnotationTemplate {
			return maxStubTemplate
		}
		return maxStubValue
	})
	return out
}

// pick is the entries of m under keys, each value bounded; nil when there
// are none.
func pick(m map[string]string, keys []string, limit func(key string) int) map[string]string {
	var out map[string]string
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(keys))
		}
		out[k] = bounded(v, limit(k))
	}
	return out
}

// bounded is s cut at n bytes, copied when cut: a slice of a long string
// would keep all of it.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.Clone(s[:n])
}
