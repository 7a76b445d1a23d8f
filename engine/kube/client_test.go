package kube

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/requeue"
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

// TestResourceMapping: a resource given as <resource>.<group> maps to its
// kind, with a reset when the discovery does not know it yet; one nobody
// serves is a no-match error.
func TestResourceMapping(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached"}
	m := &resettable{DefaultRESTMapper: meta.NewDefaultRESTMapper(nil), pending: []schema.GroupVersionKind{gvk}}
	c := NewForClients(Clients{Mapper: m}, "op")
	got, err := c.ResourceMapping(schema.GroupResource{Group: "cache.example.com", Resource: "memcacheds"})
	if err != nil {
		t.Fatalf("a resource known after a reset must map: %v", err)
	}
	if got.GroupVersionKind != gvk || got.Resource.Resource != "memcacheds" || m.resets != 1 {
		t.Fatalf("mapping %v %v after %d resets", got.GroupVersionKind, got.Resource, m.resets)
	}
	_, err = c.ResourceMapping(schema.GroupResource{Group: "cache.example.com", Resource: "missing"})
	if !meta.IsNoMatchError(err) || m.resets != 1 {
		t.Fatalf("err = %v after %d resets, want a no-match error without a second reset", err, m.resets)
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

// TestForbiddenMarked: a refusal comes back through the door marked
// terminal, and still reads as the API server's error (a namespace being
// deleted refuses new objects as Forbidden too, with its own cause).
func TestForbiddenMarked(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "c", errors.New("namespace is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	cases := []struct {
		name     string
		err      error
		terminal bool
	}{
		{name: "forbidden", err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("RBAC")), terminal: true},
		{name: "namespace terminating", err: terminating, terminal: true},
		{name: "conflict", err: apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("changed"))},
		{name: "not an API error", err: errors.New("connection refused")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := marked(1, tc.err)
			m, ok := requeue.Of(err)
			if ok != tc.terminal || m.Terminal != tc.terminal {
				t.Fatalf("mark %+v %v, want terminal %v", m, ok, tc.terminal)
			}
			if apierrors.IsForbidden(err) != apierrors.IsForbidden(tc.err) || apierrors.IsConflict(err) != apierrors.IsConflict(tc.err) {
				t.Errorf("the mark changed what apierrors reads of %v", tc.err)
			}
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) != apierrors.HasStatusCause(tc.err, corev1.NamespaceTerminatingCause) {
				t.Errorf("the mark hides the status cause of %v", tc.err)
			}
		})
	}
}

// counting counts the questions that reach the mapper.
type counting struct {
	*resettable
	calls int
}

func (c *counting) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.calls++
	return c.resettable.RESTMapping(gk, versions...)
}

// TestMappingRemembered: a kind's mapping is asked of the mapper once
// until a reset, at one version and at the preferred one alike; a reset
// (a kind nobody served) forgets the answers of the discovery it drops.
func TestMappingRemembered(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached"}
	r := &resettable{DefaultRESTMapper: meta.NewDefaultRESTMapper([]schema.GroupVersion{gvk.GroupVersion()})}
	r.Add(gvk, meta.RESTScopeNamespace)
	m := &counting{resettable: r}
	c := NewForClients(Clients{Mapper: m}, "op")
	for range 3 {
		if _, err := c.Mapping(gvk); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PreferredKind(gvk.GroupKind()); err != nil {
			t.Fatal(err)
		}
	}
	if m.calls != 2 {
		t.Fatalf("%d questions reached the mapper, want 2 (one a key)", m.calls)
	}
	// The kind is served at another version now: only a reset tells.
	v1 := schema.GroupVersionKind{Group: gvk.Group, Version: "v1", Kind: gvk.Kind}
	r.DefaultRESTMapper = meta.NewDefaultRESTMapper([]schema.GroupVersion{v1.GroupVersion()})
	r.pending = []schema.GroupVersionKind{v1}
	if _, err := c.Mapping(schema.GroupVersionKind{Group: "x.io", Version: "v1", Kind: "Missing"}); !meta.IsNoMatchError(err) {
		t.Fatalf("err = %v, want a no-match error", err)
	}
	if r.resets != 1 {
		t.Fatalf("%d resets, want 1", r.resets)
	}
	got, err := c.PreferredKind(gvk.GroupKind())
	if err != nil || got.GroupVersionKind.Version != "v1" {
		t.Fatalf("after the reset: %v, %v; want the kind at v1", got, err)
	}
}
