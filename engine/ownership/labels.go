package ownership

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// LabelManagedBy names the operator instance (its field manager) that
	// manages a child. Child watches select on it, so the operator never
	// caches objects it does not manage.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelPartOf is KEP-3659's ApplySet membership label; its value is the
	// parent's ApplySet ID, so `kubectl` users can see what set a child is in.
	LabelPartOf = "applyset.kubernetes.io/part-of"
	// LabelParentUID is the UID of the parent object: a parent deleted and
	// re-created under the same name never claims the old one's children.
	LabelParentUID = "operator.tmplop.io/parent-uid"
	// AnnotationParent is "Kind.group/namespace/name" of the parent, for
	// mapping child events back to it; labels cannot hold long names.
	AnnotationParent = "operator.tmplop.io/parent"
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

// ApplySetID is the parent's ApplySet ID as KEP-3659 defines it:
// "applyset-" + base64url(sha256(name.namespace.kind.group)) + "-v1".
func ApplySetID(p Parent) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{p.Name, p.Namespace, p.GroupKind.Kind, p.GroupKind.Group}, ".")))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}

// Selector selects the children of one parent managed by manager.
func Selector(manager string, p Parent, uid types.UID) string {
	return fmt.Sprintf("%s=%s,%s=%s,%s=%s", LabelManagedBy, manager, LabelPartOf, ApplySetID(p), LabelParentUID, uid)
}

// ManagedSelector selects every child managed by manager.
func ManagedSelector(manager string) string { return LabelManagedBy + "=" + manager }

// IsChildOf reports whether child carries parent's identity and manager's
// label: the only children pruning may ever delete.
func IsChildOf(child, parent *unstructured.Unstructured, manager string) bool {
	l := child.GetLabels()
	return l[LabelManagedBy] == manager &&
		l[LabelPartOf] == ApplySetID(ParentOf(parent)) &&
		l[LabelParentUID] == string(parent.GetUID())
}
