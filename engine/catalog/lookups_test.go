package catalog

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/render"
)

// TestResolveLookup: the lookup policy, as the controller and lint apply it.
func TestResolveLookup(t *testing.T) {
	k := &Kind{Spec: Spec{Lookups: []LookupSpec{
		{APIVersion: "v1", Kind: "Pod"},
		{APIVersion: "v1", Kind: "Secret", AllNamespaces: true},
		{APIVersion: "v1", Kind: "Node"},
	}}}
	pod := schema.GroupKind{Kind: "Pod"}
	secret := schema.GroupKind{Kind: "Secret"}
	node := schema.GroupKind{Kind: "Node"}
	cases := []struct {
		name                string
		gk                  schema.GroupKind
		namespaced          bool
		namespace, parentNS string
		wantNS              string
		wantErr             string
	}{
		{name: "declared, in the parent's namespace", gk: pod, namespaced: true, namespace: "a", parentNS: "a", wantNS: "a"},
		{name: "declared, another namespace", gk: pod, namespaced: true, namespace: "b", parentNS: "a",
			wantErr: `Pod in namespace "b" is outside the parent's namespace "a" (kind.yaml lookups: allNamespaces: true allows it)`},
		{name: "declared, all namespaces", gk: pod, namespaced: true, namespace: "", parentNS: "a", wantErr: "Pod in all namespaces is outside"},
		{name: "declared, from a cluster-scoped parent", gk: pod, namespaced: true, namespace: "a", parentNS: "",
			wantErr: "from a cluster-scoped parent, which has no namespace of its own"},
		{name: "allNamespaces", gk: secret, namespaced: true, namespace: "b", parentNS: "a", wantNS: "b"},
		{name: "allNamespaces from a cluster-scoped parent", gk: secret, namespaced: true, namespace: "", wantNS: ""},
		{name: "cluster-scoped kind", gk: node, namespaced: false, namespace: "ignored", parentNS: "a", wantNS: ""},
		{name: "undeclared", gk: schema.GroupKind{Kind: "ConfigMap"}, namespaced: true, namespace: "a", parentNS: "a",
			wantErr: "ConfigMap is not declared in kind.yaml lookups"},
		{name: "same kind, other group", gk: schema.GroupKind{Group: "e.io", Kind: "Pod"}, namespaced: true, namespace: "a", parentNS: "a",
			wantErr: "Pod.e.io is not declared"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ns, err := k.ResolveLookup(tc.gk, tc.namespaced, tc.namespace, tc.parentNS)
			if tc.wantErr != "" {
				if !errors.Is(err, render.ErrLookupRefused) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want a refusal containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || ns != tc.wantNS {
				t.Fatalf("got %q, %v; want %q", ns, err, tc.wantNS)
			}
		})
	}
}
