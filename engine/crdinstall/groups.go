package crdinstall

import (
	"fmt"
	"strings"
)

// ReservedGroup says why a kind folder may not define a CRD in group, or
// returns "" when it may. The groups refused are the ones whose CRDs (or
// built-in APIs) belong to Kubernetes or to its SIG projects, never to a
// template folder:
//
//   - a group without a dot: the core group "" and the legacy groups apps,
//     batch, policy, autoscaling... The API server refuses such a CRD
//     itself ("should be a domain with at least one dot"); refusing it here
//     says why before any request.
//   - k8s.io, kubernetes.io and their subdomains: Kubernetes' own APIs
//     (networking.k8s.io, rbac.authorization.k8s.io), aggregated APIs
//     (metrics.k8s.io) and the CRDs that passed the Kubernetes API review
//     (gateway.networking.k8s.io, snapshot.storage.k8s.io). The API server
//     admits a CRD there only with an api-approved.kubernetes.io
//     annotation, but that annotation is the folder's to write (even
//     "unapproved, ..." is accepted), so the server's guard is no guard
//     against a folder.
//   - x-k8s.io and its subdomains, by choice: the API server does not
//     protect them (no API review is asked of them), but the Kubernetes
//     project gives them to its SIG subprojects, whose releases install
//     these CRDs (Cluster API cluster.x-k8s.io, Gateway API's experimental
//     gateway.networking.x-k8s.io, Kueue, JobSet). A folder defining one is
//     a mistake or a squat: the operator would create the CRD before the
//     project's own release does, with the folder's schema, and then own
//     it. A folder may still serve such a kind: without crd.yaml or a
//     schema in kind.yaml, nothing is installed.
//
// An installed CRD of any other group is guarded by ownership instead
// (Install refuses a CRD this operator did not create).
func ReservedGroup(group string) string {
	g := strings.TrimSuffix(strings.ToLower(group), ".")
	under := func(domain string) bool { return g == domain || strings.HasSuffix(g, "."+domain) }
	switch {
	case g == "":
		return "the core API group is Kubernetes' own"
	case !strings.Contains(g, "."):
		return "a group without a dot is a Kubernetes API group (apps, batch, policy, autoscaling...), never a CRD's"
	case under("x-k8s.io"):
		return "x-k8s.io and its subdomains are Kubernetes' for its SIG projects (Cluster API, Gateway API, Kueue...), whose releases install these CRDs"
	case under("k8s.io"), under("kubernetes.io"):
		return "k8s.io, kubernetes.io and their subdomains belong to Kubernetes: its own APIs and the CRDs that passed its API review"
	}
	return ""
}

// ReservedGroupError is a folder's CRD refused because of its group
// (ReservedGroup): nothing was sent to the API server.
type ReservedGroupError struct {
	// CRD is the CRD's name.
	CRD string
	// Where names the group: "kind.yaml" or "the folder's CRD".
	Where string
	// Group is the group refused, Reason ReservedGroup's.
	Group, Reason string
}

func (e *ReservedGroupError) Error() string {
	return fmt.Sprintf("CRD %s refused, nothing installed: %s names group %q, and %s; the operator installs CRDs only in a group of a domain of your own "+
		"(a folder may serve a Kubernetes kind: without crd.yaml and without a schema in kind.yaml)", e.CRD, e.Where, e.Group, e.Reason)
}
