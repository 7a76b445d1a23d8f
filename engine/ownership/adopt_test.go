package ownership

import (
	"errors"
	"github.com/tmplop/operator/engine/shard"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func TestAdopt(t *testing.T) {
	parent := obj("cache.example.com/v1alpha1", "Memcached", "team-a", "mc")
	parent.SetUID("uid-1")
	clusterParent := obj("e.io/v1", "Team", "", "t")
	clusterParent.SetUID("uid-1")
	cases := []struct {
		name        string
		parent      *unstructured.Unstructured
		child       *unstructured.Unstructured
		namespaced  bool
		allow       bool
		kept        bool // the kind keeps the child (a chart's helm.sh/resource-policy: keep)
		bounds      Bounds
		wantNS      string
		wantOwner   bool
		wantOutside bool
		wantErr     string
	}{
		{name: "namespace defaulted", child: obj("apps/v1", "Deployment", "", "d"), namespaced: true, wantNS: "team-a", wantOwner: true},
		{name: "same namespace kept", child: obj("v1", "Service", "team-a", "s"), namespaced: true, wantNS: "team-a", wantOwner: true},
		{name: "other namespace refused", child: obj("v1", "ConfigMap", "team-b", "c"), namespaced: true, wantErr: `in namespace "team-b", outside the parent's namespace "team-a"`},
		{name: "cluster-scoped refused", child: obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "r"), wantErr: "cluster-scoped: kind.yaml must set allowClusterScoped"},
		{name: "cluster-scoped allowed, no owner", child: obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "r"), allow: true, wantOutside: true},
		{name: "namespace cleared on cluster-scoped", child: obj("v1", "Namespace", "team-a", "n"), allow: true, wantOutside: true},
		{name: "other namespace allowed, no owner", child: obj("v1", "ConfigMap", "team-b", "c"), namespaced: true, allow: true, wantNS: "team-b", wantOutside: true},
		{name: "cluster-scoped parent: namespaced child refused", parent: clusterParent, child: obj("v1", "ConfigMap", "team-b", "c"), namespaced: true, wantErr: `a child of cluster-scoped Team "t"`},
		{name: "cluster-scoped parent: cluster-scoped child refused", parent: clusterParent, child: obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "r"), wantErr: "allowClusterScoped"},
		{name: "cluster-scoped parent: allowed, owned, no finalizer", parent: clusterParent, child: obj("v1", "ConfigMap", "team-b", "c"), namespaced: true, allow: true, wantNS: "team-b", wantOwner: true},
		{name: "cluster-scoped parent: cluster-scoped child owned", parent: clusterParent, child: obj("v1", "Namespace", "", "n"), allow: true, wantOwner: true},
		// Bounds hold whatever kind.yaml allows.
		{name: "operator's namespace refused, even allowed", child: obj("v1", "ConfigMap", "operator-system", "folder"), namespaced: true, allow: true,
			bounds: Bounds{Protected: []string{"operator-system"}}, wantErr: `namespace "operator-system" is the operator's own`},
		{name: "parent in the operator's namespace: defaulted child refused", parent: obj("cache.example.com/v1alpha1", "Memcached", "operator-system", "mc"),
			child: obj("v1", "ConfigMap", "", "c"), namespaced: true, bounds: Bounds{Protected: []string{"operator-system"}}, wantErr: "is the operator's own"},
		{name: "the operator's Namespace object refused", child: obj("v1", "Namespace", "", "operator-system"), allow: true,
			bounds: Bounds{Protected: []string{"operator-system"}}, wantErr: `Namespace "operator-system" is the operator's own`},
		{name: "other Namespace object allowed", child: obj("v1", "Namespace", "", "team-c"), allow: true,
			bounds: Bounds{Protected: []string{"operator-system"}}, wantOutside: true},
		{name: "outside --namespace refused, even allowed", child: obj("v1", "ConfigMap", "team-b", "c"), namespaced: true, allow: true,
			bounds: Bounds{Namespace: "team-a"}, wantErr: `outside the namespace the operator watches (run --namespace team-a)`},
		{name: "inside --namespace kept", child: obj("v1", "ConfigMap", "", "c"), namespaced: true,
			bounds: Bounds{Namespace: "team-a"}, wantNS: "team-a", wantOwner: true},
		{name: "cluster-scoped under --namespace allowed", child: obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "r"), allow: true,
			bounds: Bounds{Namespace: "team-a"}, wantOutside: true},
		// A kept child outlives its parent: no owner reference for the
		// garbage collector, no finalizer to delete it.
		{name: "kept: no owner, no finalizer", child: obj("v1", "Secret", "", "db"), namespaced: true, kept: true, wantNS: "team-a"},
		{name: "kept outside the namespace: no finalizer", child: obj("v1", "ConfigMap", "team-b", "c"), namespaced: true, allow: true, kept: true, wantNS: "team-b"},
		{name: "kept, cluster-scoped parent: no owner", parent: clusterParent, child: obj("v1", "Namespace", "", "n"), allow: true, kept: true},
		{name: "kept still contained", child: obj("v1", "ConfigMap", "team-b", "c"), namespaced: true, kept: true,
			wantErr: `in namespace "team-b", outside the parent's namespace "team-a"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := parent
			if tc.parent != nil {
				parent = tc.parent
			}
			pol := Policy{Manager: "op", AllowOutside: tc.allow, Bounds: tc.bounds}
			if tc.kept {
				pol.Kept = func(metav1.Object) bool { return true }
			}
			outside, err := Adopt(parent, tc.child, tc.namespaced, "t.yaml", pol)
			if tc.wantErr != "" {
				var oe *OutsideError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &oe) {
					t.Fatalf("err = %v, want an OutsideError with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if outside != tc.wantOutside {
				t.Errorf("outside = %v, want %v", outside, tc.wantOutside)
			}
			if got := tc.child.GetNamespace(); got != tc.wantNS {
				t.Errorf("namespace = %q, want %q", got, tc.wantNS)
			}
			refs := tc.child.GetOwnerReferences()
			if tc.wantOwner != (len(refs) == 1 && refs[0].UID == "uid-1" && *refs[0].Controller) || !tc.wantOwner && len(refs) > 0 {
				t.Errorf("owner refs = %v, want controller ref: %v", refs, tc.wantOwner)
			}
			if !IsChildOf(tc.child, parent, "op") || IsChildOf(tc.child, parent, "other") {
				t.Errorf("labels = %v: IsChildOf wrong", tc.child.GetLabels())
			}
			p, err := ParseParent(tc.child.GetAnnotations()[AnnotationParent])
			if err != nil || p != ParentOf(parent) || tc.child.GetAnnotations()[AnnotationTemplate] != "t.yaml" {
				t.Errorf("annotations = %v %v", tc.child.GetAnnotations(), err)
			}
		})
	}
}

// TestAdoptShard: a sharded replica's children carry its shard, and the
// same content hashes the same on every shard, so that a child that moved
// with its parent is not written again by its new holder.
func TestAdoptShard(t *testing.T) {
	parent := obj("cache.example.com/v1alpha1", "Memcached", "team-a", "mc")
	parent.SetUID("uid-1")
	adopt := func(shardID string) map[string]string {
		c := obj("v1", "ConfigMap", "", "c")
		if _, err := Adopt(parent, c, true, "t.yaml", Policy{Manager: "op", Shard: shardID}); err != nil {
			t.Fatal(err)
		}
		return map[string]string{"held-by": c.GetLabels()[shard.HeldByLabel], "hash": c.GetAnnotations()[AnnotationHash]}
	}
	none, a, b := adopt(""), adopt("a"), adopt("b")
	if none["held-by"] != "" || a["held-by"] != "a" || b["held-by"] != "b" {
		t.Errorf("held-by labels: unsharded %q, a %q, b %q", none["held-by"], a["held-by"], b["held-by"])
	}
	if none["hash"] == "" || a["hash"] != none["hash"] || b["hash"] != none["hash"] {
		t.Errorf("hashes differ by shard: unsharded %q, a %q, b %q", none["hash"], a["hash"], b["hash"])
	}
}

func TestAdoptRefusesAnotherController(t *testing.T) {
	parent := obj("cache.example.com/v1alpha1", "Memcached", "ns", "mc")
	parent.SetUID("uid-1")
	child := obj("apps/v1", "Deployment", "", "d")
	child.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Other", Name: "x", UID: "uid-2", Controller: ptr.To(true)}})
	if _, err := Adopt(parent, child, true, "d.yaml", Policy{Manager: "op"}); err == nil || !strings.Contains(err.Error(), "another controller") {
		t.Fatalf("err = %v, want refusal", err)
	}
}

func TestClaim(t *testing.T) {
	parent := obj("app.example.com/v1", "AppService", "ns", "web")
	parent.SetUID("uid-new")
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	existing := func(ann, labels map[string]string, owner *metav1.OwnerReference) *unstructured.Unstructured {
		o := obj("apps/v1", "Deployment", "ns", "web")
		o.SetAnnotations(ann)
		o.SetLabels(labels)
		if owner != nil {
			o.SetOwnerReferences([]metav1.OwnerReference{*owner})
		}
		return o
	}
	mine := map[string]string{AnnotationParent: "AppService.app.example.com/ns/web"}
	helmLabel := map[string]string{LabelManagedBy: "Helm"}
	consented := func(ann map[string]string) map[string]string {
		ann[AnnotationParent] = mine[AnnotationParent]
		return ann
	}
	cases := []struct {
		name     string
		existing *unstructured.Unstructured
		helm     bool // the kind accepts Helm releases (adoptHelmReleases)
		wantErr  string
	}{
		{name: "created by kubectl: refused with the way to adopt", existing: existing(nil, nil, nil),
			wantErr: "exists and is not owned by this AppService; to let it adopt the object, annotate the object with operator.tmplop.io/parent=AppService.app.example.com/ns/web"},
		{name: "ours for this parent", existing: existing(mine, map[string]string{LabelManagedBy: "op"},
			&metav1.OwnerReference{APIVersion: "app.example.com/v1", Kind: "AppService", Name: "web", UID: "uid-new", Controller: ptr.To(true)})},
		{name: "ours for an earlier object of the same name", existing: existing(mine, map[string]string{LabelManagedBy: "op"},
			&metav1.OwnerReference{APIVersion: "app.example.com/v1", Kind: "AppService", Name: "web", UID: "uid-old", Controller: ptr.To(true)})},
		{name: "adoption consented by annotation", existing: existing(mine, nil, nil)},
		{name: "consented but controlled by a ReplicaSet", existing: existing(mine, nil,
			&metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "uid-rs", Controller: ptr.To(true)}),
			wantErr: `controlled by ReplicaSet "rs"`},
		{name: "another parent's child", existing: existing(map[string]string{AnnotationParent: "AppService.app.example.com/ns/other"},
			map[string]string{LabelManagedBy: "op"}, nil), wantErr: "belongs to AppService.app.example.com/ns/other"},
		// A Helm release's objects: the kind's opt-in accepts the consent
		// of whoever may write them, never replaces it.
		{name: "helm release of the parent's name, opted in, no consent: refused with the way to consent", helm: true,
			existing: existing(releaseOf("web", "ns"), helmLabel, nil),
			wantErr: "is not owned by this AppService: it belongs to the Helm release ns/web, which this AppService takes over only with the consent " +
				"of whoever may write the release's objects: they annotate each of them with operator.tmplop.io/parent=AppService.app.example.com/ns/web " +
				"(the whole release: helm get manifest web -n ns | kubectl annotate -n ns -f - operator.tmplop.io/parent=AppService.app.example.com/ns/web)"},
		{name: "helm release of the parent's name, opted in, consented: taken over", helm: true,
			existing: existing(consented(releaseOf("web", "ns")), helmLabel, nil)},
		{name: "helm release of the parent's name, not opted in, no consent: refused", existing: existing(releaseOf("web", "ns"), helmLabel, nil),
			wantErr: "is not owned by this AppService; to let it adopt the object, annotate the object with operator.tmplop.io/parent=AppService.app.example.com/ns/web"},
		{name: "helm release of the parent's name, not opted in, consented: refused, naming the opt-in",
			existing: existing(consented(releaseOf("web", "ns")), helmLabel, nil),
			wantErr: "was made by Helm (app.kubernetes.io/managed-by: Helm) and its owner consents to this AppService taking it over, " +
				"but kind AppService.app.example.com does not take over Helm releases: its kind.yaml must set adoptHelmReleases: true"},
		{name: "helm-made without release annotations, not opted in, consented: refused", existing: existing(mine, helmLabel, nil),
			wantErr: "does not take over Helm releases"},
		{name: "helm release of another name, opted in, consented: taken over", helm: true,
			existing: existing(consented(releaseOf("other", "ns")), helmLabel, nil)},
		{name: "helm release of another name, opted in, no consent: refused", helm: true, existing: existing(releaseOf("other", "ns"), helmLabel, nil),
			wantErr: "is not owned by this AppService; to let it adopt"},
		{name: "helm release of another namespace, opted in, no consent: refused", helm: true, existing: existing(releaseOf("web", "elsewhere"), helmLabel, nil),
			wantErr: "is not owned by this AppService; to let it adopt"},
		{name: "helm's annotations without helm's managed-by label, opted in, no consent: refused", helm: true, existing: existing(releaseOf("web", "ns"), nil, nil),
			wantErr: "is not owned by this AppService; to let it adopt"},
		{name: "helm's annotations without helm's managed-by label, consented: taken over, no opt-in needed",
			existing: existing(consented(releaseOf("web", "ns")), nil, nil)},
		{name: "helm release consented but controlled by a ReplicaSet: refused", helm: true,
			existing: existing(consented(releaseOf("web", "ns")), helmLabel,
				&metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "uid-rs", Controller: ptr.To(true)}),
			wantErr: `controlled by ReplicaSet "rs"`},
		{name: "helm release already another parent's: refused", helm: true,
			existing: existing(map[string]string{AnnotationParent: "AppService.app.example.com/ns/other", AnnotationHelmReleaseName: "web",
				AnnotationHelmReleaseNamespace: "ns"}, map[string]string{LabelManagedBy: "op"}, nil), wantErr: "belongs to AppService.app.example.com/ns/other"},
		{name: "helm release consented to another parent: refused", helm: true,
			existing: existing(map[string]string{AnnotationParent: "AppService.app.example.com/ns/other", AnnotationHelmReleaseName: "web",
				AnnotationHelmReleaseNamespace: "ns"}, helmLabel, nil), wantErr: "it belongs to the Helm release ns/web"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Claim(tc.existing, gk, parent, Claimant{Manager: "op", AdoptHelmReleases: tc.helm})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *ConflictError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want a ConflictError with %q", err, tc.wantErr)
			}
		})
	}
}

// releaseOf is the annotations helm install puts on a release's objects.
func releaseOf(name, namespace string) map[string]string {
	return map[string]string{AnnotationHelmReleaseName: name, AnnotationHelmReleaseNamespace: namespace}
}

// TestAdoptOwnerAPIVersion: the controller reference names the version the
// policy says, not the parent's (read at the kind's hub), so that a child
// rendered for a parent read at v1 is the same child, hash included, as
// one rendered for it at v1alpha1: moving the hub rewrites no child.
func TestAdoptOwnerAPIVersion(t *testing.T) {
	adopt := func(parentVersion, owner string) (metav1.OwnerReference, string) {
		parent := obj("cache.example.com/"+parentVersion, "Memcached", "team-a", "mc")
		parent.SetUID("uid-1")
		c := obj("v1", "ConfigMap", "", "c")
		if _, err := Adopt(parent, c, true, "t.yaml", Policy{Manager: "op", OwnerAPIVersion: owner}); err != nil {
			t.Fatal(err)
		}
		return c.GetOwnerReferences()[0], c.GetAnnotations()[AnnotationHash]
	}
	old, oldHash := adopt("v1alpha1", "")
	moved, movedHash := adopt("v1", "cache.example.com/v1alpha1")
	if old.APIVersion != "cache.example.com/v1alpha1" || moved.APIVersion != old.APIVersion || movedHash != oldHash {
		t.Errorf("owner %s (hash %s) after the hub moved, %s (hash %s) before", moved.APIVersion, movedHash, old.APIVersion, oldHash)
	}
	if parentRef, _ := adopt("v1", ""); parentRef.APIVersion != "cache.example.com/v1" {
		t.Errorf("no OwnerAPIVersion: owner %s, want the parent's", parentRef.APIVersion)
	}
}
