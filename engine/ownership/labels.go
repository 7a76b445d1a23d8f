package ownership

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// LabelManagedBy names the operator instance (its field manager) that
	// manages a child. Child watches select on it; as anyone who may create
	// an object can write it, what carries it is cached whole only when it
	// is matched to a parent served, else as a stub (StubMeta).
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelParentUID is the UID of the parent object: pruning selects on it
	// with LabelManagedBy, so a parent deleted and re-created under the
	// same name never deletes the old one's children by mistake.
	LabelParentUID = "operator.tmplop.io/parent-uid"
	// AnnotationParent is "Kind.group/namespace/name" of the parent, for
	// mapping child events back to it; labels cannot hold long names. On
	// an object the operator did not create, it is the owner's consent to
	// adoption by that parent (see Claim).
	AnnotationParent = "operator.tmplop.io/parent"
	// AnnotationTemplate is the file a child was rendered from, so that the
	// deletion guard knows which children came from which template.
	AnnotationTemplate = "operator.tmplop.io/template"
	// AnnotationPrune set to "disabled" on a child (by its template) keeps
	// it when the templates stop rendering it.
	AnnotationPrune = "operator.tmplop.io/prune"
	// AnnotationHash is a hash of everything else the operator applies to
	// a child. The cluster holds it, so the decision to skip an apply
	// survives a restart: a child whose hash is the rendered one, and
	// whose fields still hold their rendered values, needs no write.
	AnnotationHash = "operator.tmplop.io/hash"
	// AnnotationSuspend set to "true" on a parent suspends it: no child
	// is applied or pruned, no hook run, and nothing of the parent written
	// but its Suspended condition, until it is removed (engine/reconcile,
	// docs/suspend-and-drift.md). Its deletion still runs.
	AnnotationSuspend = "operator.tmplop.io/suspend"
)

// Parent identifies a parent object.
type Parent struct {
	GroupKind schema.GroupKind
	Namespace string
	Name      string
}

// ParentOf returns the identity of obj as a parent.
func ParentOf(obj *unstructured.Unstructured) Parent {
	return Parent{GroupKind: obj.GroupVersionKind().GroupKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String is the AnnotationParent value: "Kind.group/namespace/name".
func (p Parent) String() string {
	return p.GroupKind.String() + "/" + p.Namespace + "/" + p.Name
}

// ParseParent reads an AnnotationParent value.
func ParseParent(s string) (Parent, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return Parent{}, fmt.Errorf("parent annotation %q: want Kind.group/namespace/name", s)
	}
	return Parent{GroupKind: schema.ParseGroupKind(parts[0]), Namespace: parts[1], Name: parts[2]}, nil
}

// Selector selects the children of the parent with uid managed by manager.
func Selector(manager string, uid types.UID) string {
	return fmt.Sprintf("%s=%s,%s=%s", LabelManagedBy, manager, LabelParentUID, uid)
}

// ManagedSelector selects every child managed by manager.
func ManagedSelector(manager string) string { return LabelManagedBy + "=" + manager }

// UnmanagedSelector selects every object not managed by manager, those
// without the label included.
func UnmanagedSelector(manager string) string { return LabelManagedBy + "!=" + manager }

// IsChildOf reports whether child carries parent's identity and manager's
// label: the only children pruning may ever delete.
func IsChildOf(child, parent *unstructured.Unstructured, manager string) bool {
	l := child.GetLabels()
	return l[LabelManagedBy] == manager && l[LabelParentUID] == string(parent.GetUID())
}

// PruneDisabled reports whether a live child opted out of pruning.
func PruneDisabled(child metav1.Object) bool {
	return child.GetAnnotations()[AnnotationPrune] == "disabled"
}
