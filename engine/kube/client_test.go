package kube

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resettable is a RESTMapper that learns a kind only when it is reset, as a
// discovery cache does when a CRD is installed after start-up.
type resettable struct {
	*meta.DefaultRESTMapper
	pending []schema.GroupVersionKind
	resets  int
}

func (r *resettable) Reset() {
	r.resets++
	for _, gvk := range r.pending {
		r.Add(gvk, meta.RESTScopeNamespace)
	}
	r.pending = nil
}

func TestMappingResetsOnMiss(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached"}
	m := &resettable{DefaultRESTMapper: meta.NewDefaultRESTMapper(nil), pending: []schema.GroupVersionKind{gvk}}
	c := NewForClients(Clients{Mapper: m}, "op")
	got, err := c.Mapping(gvk)
	if err != nil {
		t.Fatalf("a kind known after a reset must map: %v", err)
	}
	if got.Resource.Resource != "memcacheds" || m.resets != 1 {
		t.Fatalf("resource %v after %d resets", got.Resource, m.resets)
	}
	if ns, err := c.Namespaced(gvk); err != nil || !ns {
		t.Fatalf("namespaced = %v, %v", ns, err)
	}
	for range 3 {
		if _, err := c.Mapping(schema.GroupVersionKind{Group: "x.io", Version: "v1", Kind: "Missing"}); !meta.IsNoMatchError(err) {
			t.Fatalf("err = %v, want a no-match error", err)
		}
	}
	if m.resets != 1 {
		t.Fatalf("%d resets: misses within the reset interval must not rediscover", m.resets)
	}
}

func TestOfflineNamespaced(t *testing.T) {
	cases := []struct {
		gvk  schema.GroupVersionKind
		want bool
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, true},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, true},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, false},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, false},
		{schema.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached"}, true},
	}
	for _, tc := range cases {
		if got, _ := OfflineNamespaced(tc.gvk); got != tc.want {
			t.Errorf("%s: namespaced = %v, want %v", tc.gvk, got, tc.want)
		}
	}
}
