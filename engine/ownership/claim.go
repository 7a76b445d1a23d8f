package ownership

import (
	"fmt"
	"time"

	"github.com/tmplop/operator/engine/requeue"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ConflictError is an existing object that a parent's template renders
// but that is not the parent's to change: server-side apply with force
// would rewrite it and add the parent's owner reference, and deleting the
// parent would then garbage-collect an object it never created (the
// confused deputy of kro's CVE-2025-48710).
type ConflictError struct {
	Reason string
}

func (e *ConflictError) Error() string { return e.Reason }

// conflictRetry is when a parent that found its child taken looks again,
// if no change of the occupant woke it before (Reconciler.WaitFor): the
// slow retry is a safety net for an event missed.
const conflictRetry = 5 * time.Minute

// RequeueMark: terminal until the occupant changes or goes.
func (e *ConflictError) RequeueMark() requeue.Mark {
	return requeue.Mark{Cause: requeue.CauseOwnership, Terminal: true, After: conflictRetry}
}

// Helm's release annotations: an object that helm install (or the Helm
// operator) made names its release with them.
const (
	AnnotationHelmReleaseName      = "meta.helm.sh/release-name"
	AnnotationHelmReleaseNamespace = "meta.helm.sh/release-namespace"
)

// Claimant is who claims a child: the operator's field manager, and
// whether the parent takes over the Helm release of its name (a chart
// kind: docs/helm.md).
type Claimant struct {
	Manager           string
	AdoptHelmReleases bool
}

// Claim decides whether parent may apply over existing, the live object
// of the same group, kind, namespace and name as one of its children. It
// may when the object names parent in its AnnotationParent annotation:
// either the operator made it for this parent (or for an earlier object of
// the same name, being replaced), or whoever owns the object consented to
// the adoption by writing that annotation, as Helm's release annotations
// work. A chart kind's parent may also take over the objects of the Helm
// release named as the parent, in the parent's namespace: that is how a
// release moves from helm install or the Helm operator to the engine.
// Even then, another controller keeps its object.
func Claim(existing metav1.Object, gk schema.GroupKind, parent *unstructured.Unstructured, who Claimant) error {
	p := ParentOf(parent)
	what := fmt.Sprintf("%s %s", gk, objectPath(existing.GetNamespace(), existing.GetName()))
	named := existing.GetAnnotations()[AnnotationParent]
	if named == p.String() || who.AdoptHelmReleases && named == "" && helmRelease(existing, parent) {
		if c := metav1.GetControllerOfNoCopy(existing); c != nil && c.UID != parent.GetUID() &&
			(c.Kind != parent.GetKind() || c.Name != parent.GetName() || groupOf(c.APIVersion) != p.GroupKind.Group) {
			return &ConflictError{Reason: fmt.Sprintf("%s exists and is controlled by %s %q, not by this %s", what, c.Kind, c.Name, p.GroupKind.Kind)}
		}
		return nil
	}
	if named != "" && existing.GetLabels()[LabelManagedBy] == who.Manager {
		return &ConflictError{Reason: fmt.Sprintf("%s exists and belongs to %s: two objects render the same child", what, named)}
	}
	return &ConflictError{Reason: fmt.Sprintf("%s exists and is not owned by this %s; to let it adopt the object, annotate the object with %s=%s",
		what, p.GroupKind.Kind, AnnotationParent, p.String())}
}

func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}

func objectPath(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// helmRelease reports whether existing belongs to the Helm release that
// parent takes over: made by Helm (its managed-by label), for the release
// of parent's name in parent's namespace. A Helm release of a
// cluster-scoped parent has no namespace of its own to match, and is never
// taken over.
func helmRelease(existing metav1.Object, parent *unstructured.Unstructured) bool {
	ann := existing.GetAnnotations()
	return parent.GetNamespace() != "" && existing.GetLabels()[LabelManagedBy] == "Helm" &&
		ann[AnnotationHelmReleaseName] == parent.GetName() &&
		ann[AnnotationHelmReleaseNamespace] == parent.GetNamespace()
}
