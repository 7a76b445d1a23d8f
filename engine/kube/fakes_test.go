package kube

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/tmplop/operator/engine/cached"
)

var (
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func configMap(ns, name string, labels map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name}
	if labels != nil {
		md["labels"] = labels
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}}
}

func fakeClient(objs ...runtime.Object) (*Client, *dynamicfake.FakeDynamicClient) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(configMapGVK, meta.RESTScopeNamespace)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMapGVR: "ConfigMapList"}, objs...)
	return NewForClients(Clients{Dynamic: dyn, Mapper: mapper, Core: fake.NewClientset().CoreV1()}, "op"), dyn
}

// TestClientOnFakes: the engine's calls, made on fakes, reach the fake
// dynamic client as the API server would receive them.
func TestClientOnFakes(t *testing.T) {
	c, dyn := fakeClient(configMap("a", "one", map[string]any{"app": "x"}), configMap("b", "two", nil))
	ctx := t.Context()
	m, err := c.Mapping(configMapGVK)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, m, "a", "one"); err != nil || got.GetUID() != "uid-one" {
		t.Fatalf("get: %v, %v", got, err)
	}
	all, err := c.List(ctx, m, metav1.NamespaceAll, metav1.ListOptions{})
	if err != nil || len(all.Items) != 2 {
		t.Fatalf("list of all namespaces: %v, %v", all, err)
	}
	if err := c.Delete(ctx, configMapGVK, "a", "missing", "u"); err != nil {
		t.Fatalf("deleting what is gone: %v", err)
	}
	if err := c.Delete(ctx, configMapGVK, "a", "one", "uid-one"); err != nil {
		t.Fatal(err)
	}
	dyn.PrependReactor("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchActionImpl)
		if p.PatchOptions.FieldManager != "op" || p.PatchOptions.Force == nil || !*p.PatchOptions.Force {
			t.Errorf("apply options %+v: want field manager op, forced", p.PatchOptions)
		}
		return true, configMap("b", "three", nil), nil
	})
	if _, err := c.Apply(ctx, configMap("b", "three", nil)); err != nil {
		t.Fatal(err)
	}
	if c.FieldManager() != "op" || c.Identity() != "" {
		t.Fatalf("field manager %q, identity %q", c.FieldManager(), c.Identity())
	}
	as, err := c.Impersonating("system:serviceaccount:ops:kinds")
	if err != nil {
		t.Fatal(err)
	}
	if as.Identity() != "system:serviceaccount:ops:kinds" || as.FieldManager() != "op" || as.dynamic != dyn {
		t.Fatalf("impersonating on fakes: identity %q, field manager %q", as.Identity(), as.FieldManager())
	}
}

// TestListWatchOnFakes: the informers' list and watch over a fake dynamic
// client, whole and metadata only, cut by the label selector.
func TestListWatchOnFakes(t *testing.T) {
	c, _ := fakeClient(configMap("a", "mine", map[string]any{"managed": "op"}), configMap("a", "theirs", nil))
	l, err := c.ListWatch(configMapGVR, "a", "managed=op").List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if items := l.(*cached.List).Items; len(items) != 1 || items[0].Name != "mine" {
		t.Fatalf("whole objects: %+v", items)
	}
	l, err = c.MetadataListWatch(configMapGVR, "a", "!managed").List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if items := l.(*metav1.PartialObjectMetadataList).Items; len(items) != 1 || items[0].Name != "theirs" || items[0].UID != "uid-theirs" {
		t.Fatalf("metadata: %+v", items)
	}
}

// TestPreferredKindResetsOnMiss: prune's and finalize's mapping of a
// group-kind resets discovery on a miss, as Mapping does.
func TestPreferredKindResetsOnMiss(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached"}
	m := &resettable{DefaultRESTMapper: meta.NewDefaultRESTMapper([]schema.GroupVersion{gvk.GroupVersion()}), pending: []schema.GroupVersionKind{gvk}}
	c := NewForClients(Clients{Mapper: m}, "op")
	got, err := c.PreferredKind(gvk.GroupKind())
	if err != nil || got.GroupVersionKind != gvk || m.resets != 1 {
		t.Fatalf("mapping %v, %v after %d resets", got, err, m.resets)
	}
	if _, err := c.PreferredKind(schema.GroupKind{Group: "x.io", Kind: "Missing"}); !meta.IsNoMatchError(err) {
		t.Fatalf("err = %v, want a no-match error", err)
	}
}

// TestImpersonatingSendsUser: a Client of a config asks nothing when it
// is made; its impersonating copy sends the user on every call.
func TestImpersonatingSendsUser(t *testing.T) {
	var mu sync.Mutex
	var users []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		users = append(users, r.Header.Get("Impersonate-User"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"a"}}`))
	}))
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL}, "op")
	if err != nil {
		t.Fatal(err)
	}
	as, err := c.Impersonating("system:serviceaccount:ops:kinds")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(users) != 0 {
		t.Fatalf("%d requests while making clients", len(users))
	}
	mu.Unlock()
	m := &meta.RESTMapping{Resource: configMapGVR, GroupVersionKind: configMapGVK, Scope: meta.RESTScopeNamespace}
	if _, err := as.Get(t.Context(), m, "a", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := as.GetConfigMap(t.Context(), "a", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetConfigMap(t.Context(), "a", "x"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"system:serviceaccount:ops:kinds", "system:serviceaccount:ops:kinds", ""}
	if len(users) != len(want) {
		t.Fatalf("users %q, want %q", users, want)
	}
	for i := range want {
		if users[i] != want[i] {
			t.Errorf("request %d as %q, want %q", i, users[i], want[i])
		}
	}
}
