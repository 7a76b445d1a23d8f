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
// whether the parent's kind takes over Helm releases (a chart kind whose
// kind.yaml sets adoptHelmReleases: docs/helm.md).
type Claimant struct {
	Manager string
	// AdoptHelmReleases is the kind author's permission to accept the
	// consent of a Helm release's owner: an object that Helm made
	// (LabelManagedBy "Helm") is taken over only with it, and only when
	// the object names the parent in AnnotationParent. It is never the
	// consent itself: the CR author chooses the parent's name, and with
	// it which release it would take.
	AdoptHelmReleases bool
}

// Claim decides whether parent may apply over existing, the live object
// of the same group, kind, namespace and name as one of its children. It
// may when the object names parent in its AnnotationParent annotation:
// either the operator made it for this parent (or for an earlier object of
// the same name, being replaced), or whoever owns the object consented to
// the adoption by writing that annotation, which takes the right to write
// the object itself. An object that Helm made is taken over only by a
// kind that accepts Helm releases: that is how a release moves from helm
// install or the Helm operator to the engine, with its owner's consent on
// each of its objects. Even then, another controller keeps its object.
//
// Helm's release annotations alone are never consent: whoever may create
// the parent's kind in a namespace could otherwise name a parent after
// any release there and take its objects over (run their own image in its
// Deployment).
func Claim(existing metav1.Object, gk schema.GroupKind, parent *unstructured.Unstructured, who Claimant) error {
	p := ParentOf(parent)
	what := fmt.Sprintf("%s %s", gk, objectPath(existing.GetNamespace(), existing.GetName()))
	named := existing.GetAnnotations()[AnnotationParent]
	consent := AnnotationParent + "=" + p.String()
	if named == p.String() {
		if c := metav1.GetControllerOfNoCopy(existing); c != nil && c.UID != parent.GetUID() &&
			(c.Kind != parent.GetKind() || c.Name != parent.GetName() || groupOf(c.APIVersion) != p.GroupKind.Group) {
			return &ConflictError{Reason: fmt.Sprintf("%s exists and is controlled by %s %q, not by this %s", what, c.Kind, c.Name, p.GroupKind.Kind)}
		}
		if helmMade(existing) && !who.AdoptHelmReleases {
			return &ConflictError{Reason: fmt.Sprintf("%s was made by Helm (%s: Helm) and its owner consents to this %s taking it over, "+
				"but kind %s does not take over Helm releases: its kind.yaml must set adoptHelmReleases: true", what, LabelManagedBy, p.GroupKind.Kind, p.GroupKind)}
		}
		return nil
	}
	if named != "" && existing.GetLabels()[LabelManagedBy] == who.Manager {
		return &ConflictError{Reason: fmt.Sprintf("%s exists and belongs to %s: two objects render the same child", what, named)}
	}
	if who.AdoptHelmReleases && helmRelease(existing, parent) {
		ns, name := parent.GetNamespace(), parent.GetName()
		return &ConflictError{Reason: fmt.Sprintf("%s exists and is not owned by this %s: it belongs to the Helm release %s/%s, "+
			"which this %s takes over only with the consent of whoever may write the release's objects: they annotate each of them with %s "+
			"(the whole release: helm get manifest %s -n %s | kubectl annotate -n %s -f - %s)",
			what, p.GroupKind.Kind, ns, name, p.GroupKind.Kind, consent, name, ns, ns, consent)}
	}
	return &ConflictError{Reason: fmt.Sprintf("%s exists and is not owned by this %s; to let it adopt the object, annotate the object with %s",
		what, p.GroupKind.Kind, consent)}
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

// helmMade reports whether Helm made existing: helm install and the Helm
// operator label what they create so, and Helm itself takes over an
// existing object only when it carries this label and its release
// annotations.
func helmMade(existing metav1.Object) bool {
	return existing.GetLabels()[LabelManagedBy] == "Helm"
}

// helmRelease reports whether existing belongs to the Helm release of
// parent's name in parent's namespace: made by Helm, its release
// annotations naming that release. A Helm release of a cluster-scoped
// parent has no namespace of its own to match.
func helmRelease(existing metav1.Object, parent *unstructured.Unstructured) bool {
	ann := existing.GetAnnotations()
	return parent.GetNamespace() != "" && helmMade(existing) &&
		ann[AnnotationHelmReleaseName] == parent.GetName() &&
		ann[AnnotationHelmReleaseNamespace] == parent.GetNamespace()
}
