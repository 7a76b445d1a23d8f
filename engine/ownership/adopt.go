package ownership

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/tmplop/operator/engine/requeue"
	"github.com/tmplop/operator/engine/shard"
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
	// AllowOutside allows children outside the parent's namespace:
	// cluster-scoped ones, ones in other namespaces, and every child of a
	// cluster-scoped parent (kind.yaml allowClusterScoped).
	AllowOutside bool
	// Bounds hold whatever AllowOutside says.
	Bounds Bounds
	// Shard is the shard of the replica that applies the children (run
	// --sharding), written on each as shard.HeldByLabel: a replica
	// watches only its own shard's children. "": not sharded.
	Shard string
	// Kept reports whether a rendered child is one that must outlive its
	// parent (a chart's helm.sh/resource-policy: keep, catalog.Kind.Kept);
	// nil: none is.
	Kept func(child metav1.Object) bool
	// OwnerAPIVersion is the apiVersion of the controller reference
	// written on each child (catalog.Kind.OwnerAPIVersion); "": the
	// parent's. A kind of several versions names one that does not move
	// when the hub moves, so that a new version rewrites no child.
	OwnerAPIVersion string
}

// OutsideError is a child the parent may not have: outside its namespace
// without the kind's opt-in.
type OutsideError struct{ Reason string }

func (e *OutsideError) Error() string { return e.Reason }

// RequeueMark: the same render asks for the same child until the object or
// the folder changes.
func (e *OutsideError) RequeueMark() requeue.Mark {
	return requeue.Mark{Cause: requeue.CauseRender, Terminal: true}
}

// ControllerError is a child whose template sets a controller reference
// of its own: the engine sets the parent as the controller, and an object
// has only one.
type ControllerError struct{ Kind, Name string }

// RequeueMark: as OutsideError's.
func (e *ControllerError) RequeueMark() requeue.Mark {
	return requeue.Mark{Cause: requeue.CauseRender, Terminal: true}
}

func (e *ControllerError) Error() string {
	return fmt.Sprintf("the template sets another controller, %s %q", e.Kind, e.Name)
}

// Adopt makes child, rendered from template file, a child of parent in
// place: namespace default, containment check, owner reference, labels and
// annotations. It reports whether the child needs the parent's finalizer:
// a namespaced parent cannot own what lies outside its namespace, so
// garbage collection will not delete it.
//
// A kept child (pol.Kept) gets no owner reference, wherever it is: the
// garbage collector would delete it with the parent, and Helm leaves it.
// Nor does it need the finalizer, which only deletes. It keeps the labels
// and annotations, so that its parent prunes nothing else in its place,
// and a new parent of the same name takes it back.
//
// Containment holds for both scopes of parent: whoever may create the
// parent in one namespace must not make the operator write outside it, and
// a cluster-scoped parent has no namespace of its own, so every child it
// renders is outside and needs the opt-in.
func Adopt(parent, child *unstructured.Unstructured, namespaced bool, file string, pol Policy) (needsFinalizer bool, err error) {
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
	if err := pol.Bounds.Check(child.GetNamespace()); err != nil {
		return false, &OutsideError{Reason: fmt.Sprintf("%s: %v", id, err)}
	}
	gvk := child.GroupVersionKind()
	if err := pol.Bounds.checkNamespaceObject(gvk.Kind, gvk.Group, child.GetName()); err != nil {
		return false, err
	}
	outside := pns == "" || !namespaced || child.GetNamespace() != pns
	if outside && !pol.AllowOutside {
		var where string
		switch {
		case pns == "":
			where = fmt.Sprintf("a child of cluster-scoped %s %q", parent.GetKind(), parent.GetName())
		case !namespaced:
			where = "cluster-scoped"
		default:
			where = fmt.Sprintf("in namespace %q, outside the parent's namespace %q", child.GetNamespace(), pns)
		}
		return false, &OutsideError{Reason: fmt.Sprintf("%s is %s: kind.yaml must set allowClusterScoped: true to allow it", id, where)}
	}
	// A cluster-scoped parent may own anything; a namespaced one only what
	// shares its namespace.
	kept := pol.Kept != nil && pol.Kept(child)
	owned := (pns == "" || !outside) && !kept
	if owned {
		if err := setController(parent, child, pol.OwnerAPIVersion); err != nil {
			return false, fmt.Errorf("%s: %w", id, err)
		}
	}
	labels := child.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManagedBy] = pol.Manager
	labels[LabelParentUID] = string(parent.GetUID())
	child.SetLabels(labels)
	ann := child.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationParent] = ParentOf(parent).String()
	ann[AnnotationTemplate] = file
	delete(ann, AnnotationHash)
	child.SetAnnotations(ann)
	ann[AnnotationHash] = Hash(child)
	child.SetAnnotations(ann)
	if pol.Shard != "" {
		// Out of the hash: a child that moved with its parent (relabelled
		// by the shard that held it, or by the sharder) is as rendered for
		// its new holder, which writes it only if its content changed.
		labels[shard.HeldByLabel] = pol.Shard
		child.SetLabels(labels)
	}
	return !owned && !kept, nil
}

// Hash is the AnnotationHash value of a child: the SHA-256 of its JSON,
// 128 bits of it in base64. Rendered objects decode from JSON, so encoding
// cannot fail, and encoding/json sorts map keys: equal content, equal hash.
func Hash(child *unstructured.Unstructured) string {
	data, _ := json.Marshal(child.Object)
	sum := sha256.Sum256(data)
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

func setController(parent, child *unstructured.Unstructured, apiVersion string) error {
	ref := controllerRef(parent)
	if apiVersion != "" {
		ref.APIVersion = apiVersion
	}
	refs := child.GetOwnerReferences()
	for i, r := range refs {
		if r.UID == ref.UID {
			refs[i] = ref
			child.SetOwnerReferences(refs)
			return nil
		}
		if r.Controller != nil && *r.Controller {
			return &ControllerError{Kind: r.Kind, Name: r.Name}
		}
	}
	child.SetOwnerReferences(append(refs, ref))
	return nil
}

func controllerRef(parent *unstructured.Unstructured) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         parent.GetAPIVersion(),
		Kind:               parent.GetKind(),
		Name:               parent.GetName(),
		UID:                parent.GetUID(),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}
