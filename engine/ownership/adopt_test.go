package ownership

import (
	"errors"
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
	cases := []struct {
		name        string
		child       *unstructured.Unstructured
		namespaced  bool
		allow       bool
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outside, err := Adopt(parent, tc.child, tc.namespaced, Policy{Manager: "op", AllowOutside: tc.allow})
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
			if tc.wantOwner != (len(refs) == 1 && refs[0].UID == "uid-1" && *refs[0].Controller) {
				t.Errorf("owner refs = %v, want controller ref: %v", refs, tc.wantOwner)
			}
			if !IsChildOf(tc.child, parent, "op") || IsChildOf(tc.child, parent, "other") {
				t.Errorf("labels = %v: IsChildOf wrong", tc.child.GetLabels())
			}
			p, err := ParseParent(tc.child.GetAnnotations()[AnnotationParent])
			if err != nil || p != ParentOf(parent) {
				t.Errorf("parent annotation = %v %v", p, err)
			}
		})
	}
}

func TestAdoptRefusesAnotherController(t *testing.T) {
	parent := obj("cache.example.com/v1alpha1", "Memcached", "ns", "mc")
	parent.SetUID("uid-1")
	child := obj("apps/v1", "Deployment", "", "d")
	child.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Other", Name: "x", UID: "uid-2", Controller: ptr.To(true)}})
	if _, err := Adopt(parent, child, true, Policy{Manager: "op"}); err == nil || !strings.Contains(err.Error(), "another controller") {
		t.Fatalf("err = %v, want refusal", err)
	}
}

func TestApplySetID(t *testing.T) {
	// The KEP's own example: name "mysecret", namespace "myns", Secret in the core group.
	p := Parent{GroupKind: schema.GroupKind{Kind: "Secret"}, Namespace: "myns", Name: "mysecret"}
	id := ApplySetID(p)
	if !strings.HasPrefix(id, "applyset-") || !strings.HasSuffix(id, "-v1") || len(id) > 63 {
		t.Fatalf("id %q is not a valid ApplySet label value", id)
	}
	if id != ApplySetID(p) || id == ApplySetID(Parent{GroupKind: p.GroupKind, Namespace: "other", Name: "mysecret"}) {
		t.Fatal("ApplySetID must be stable and distinct per parent")
	}
}
