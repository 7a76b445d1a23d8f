package ownership

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// Scope tells whether a kind is namespaced.
type Scope func(gvk schema.GroupVersionKind) (namespaced bool, err error)

// Policy is what a kind allows its children.
type Policy struct {
	// Manager is the operator's field manager, the value of LabelManagedBy.
	Manager string
	// AllowOutside allows cluster-scoped children and children in other
	// namespaces (kind.yaml allowClusterScoped).
	AllowOutside bool
}

// OutsideError is a child the parent may not have: cluster-scoped or in
// another namespace without the kind's opt-in.
type OutsideError struct{ Reason string }

func (e *OutsideError) Error() string { return e.Reason }

// Adopt makes child a child of parent in place: namespace default, scope
// check, owner reference, labels and annotation. It reports whether the child
// is outside the parent's namespace (cluster-scoped or another namespace):
// such children have no owner reference and are cleaned up through the
// parent's finalizer.
func Adopt(parent, child *unstructured.Unstructured, namespaced bool, pol Policy) (outside bool, err error) {
	pns := parent.GetNamespace()
	id := fmt.Sprintf("%s %q", child.GetKind(), child.GetName())
	switch {
	case namespaced && child.GetNamespace() == "":
		if pns == "" {
			return false, fmt.Errorf("%s: a namespaced child of a cluster-scoped parent needs metadata.namespace", id)
		}
		child.SetNamespace(pns)
	case !namespaced && child.GetNamespace() != "":
		// The API server ignores it for cluster-scoped kinds; clearing it
		// keeps the object we compare with the live one honest.
		child.SetNamespace("")
	}
	outside = pns != "" && (!namespaced || child.GetNamespace() != pns)
	if outside && !pol.AllowOutside {
		where := "cluster-scoped"
		if namespaced {
			where = fmt.Sprintf("in namespace %q, outside the parent's namespace %q", child.GetNamespace(), pns)
		}
		return true, &OutsideError{Reason: fmt.Sprintf("%s is %s: kind.yaml must set allowClusterScoped: true to allow it", id, where)}
	}
	if !outside {
		if err := setController(parent, child); err != nil {
			return false, fmt.Errorf("%s: %w", id, err)
		}
	}
	p := ParentOf(parent)
	labels := child.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManagedBy] = pol.Manager
	labels[LabelPartOf] = ApplySetID(p)
	labels[LabelParentUID] = string(parent.GetUID())
	child.SetLabels(labels)
	ann := child.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationParent] = p.String()
	child.SetAnnotations(ann)
	return outside, nil
}

func setController(parent, child *unstructured.Unstructured) error {
	ref := metav1.OwnerReference{
		APIVersion:         parent.GetAPIVersion(),
		Kind:               parent.GetKind(),
		Name:               parent.GetName(),
		UID:                parent.GetUID(),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
	refs := child.GetOwnerReferences()
	for i, r := range refs {
		if r.UID == ref.UID {
			refs[i] = ref
			child.SetOwnerReferences(refs)
			return nil
		}
		if r.Controller != nil && *r.Controller {
			return fmt.Errorf("the template sets another controller, %s %q", r.Kind, r.Name)
		}
	}
	child.SetOwnerReferences(append(refs, ref))
	return nil
}
