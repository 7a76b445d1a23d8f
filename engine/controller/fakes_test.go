package controller

import (
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/internal/testsupport/revisiontest"
)

var (
	widgetGVK    = schema.GroupVersionKind{Group: "e.io", Version: "v1", Kind: "Widget"}
	widgetGVR    = schema.GroupVersionResource{Group: "e.io", Version: "v1", Resource: "widgets"}
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// fakeCluster is a fake dynamic client that server-side applies as far as
// the controller's tests need: an apply creates the object or overlays
// its fields, the status subresource replaces the status; every write
// gets a new resourceVersion.
type fakeCluster struct {
	t      *testing.T
	dyn    *dynamicfake.FakeDynamicClient
	client *kube.Client
	// core is the fake core group behind client, for a test's own writes.
	core typedcorev1.CoreV1Interface
	// apps serves the revision records (engine/revision) behind client.
	apps *fake.Clientset

	mu sync.Mutex
	rv int
}

func newFakeCluster(t *testing.T, objs ...runtime.Object) *fakeCluster {
	return newFakeClusterWith(t, kube.Clients{Core: fake.NewClientset().CoreV1()}, objs...)
}

// newFakeClusterWith is newFakeCluster with the core group, the metadata
// client and the authorizer of cs (its Dynamic and Mapper are the fake
// cluster's).
func newFakeClusterWith(t *testing.T, cs kube.Clients, objs ...runtime.Object) *fakeCluster {
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, widgetGVK.GroupVersion()})
	mapper.Add(configMapGVK, meta.RESTScopeNamespace)
	mapper.Add(widgetGVK, meta.RESTScopeNamespace)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		configMapsGVR: "ConfigMapList", widgetGVR: "WidgetList"}, objs...)
	apps := fake.NewClientset()
	f := &fakeCluster{t: t, dyn: dyn, rv: 100, core: cs.Core, apps: apps,
		client: kube.NewForClients(kube.Clients{Dynamic: dyn, Mapper: mapper, Core: cs.Core, Metadata: cs.Metadata, Authorization: cs.Authorization,
			Revisions: revisiontest.Typed{Getter: apps.AppsV1()}}, "op")}
	dyn.PrependReactor("patch", "*", f.apply)
	return f
}

func (f *fakeCluster) nextRV() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	return fmt.Sprint(f.rv)
}

func (f *fakeCluster) apply(a clienttesting.Action) (bool, runtime.Object, error) {
	p := a.(clienttesting.PatchActionImpl)
	if p.GetPatchType() != types.ApplyPatchType {
		return false, nil, nil
	}
	patch := &unstructured.Unstructured{}
	if err := patch.UnmarshalJSON(p.GetPatch()); err != nil {
		return true, nil, err
	}
	gvr, ns, tracker := p.GetResource(), p.GetNamespace(), f.dyn.Tracker()
	old, err := tracker.Get(gvr, ns, p.GetName())
	switch {
	case apierrors.IsNotFound(err) && p.GetSubresource() == "":
		patch.SetUID(types.UID("uid-" + p.GetName()))
		patch.SetGeneration(1)
		patch.SetResourceVersion(f.nextRV())
		return true, patch, tracker.Create(gvr, patch, ns)
	case err != nil:
		return true, nil, err
	}
	live := old.(*unstructured.Unstructured).DeepCopy()
	if p.GetSubresource() == "status" {
		live.Object["status"] = patch.Object["status"]
	} else {
		for k, v := range patch.Object {
			if k != "metadata" && k != "status" {
				live.Object[k] = v
			}
		}
		live.SetLabels(patch.GetLabels())
		live.SetAnnotations(patch.GetAnnotations())
	}
	live.SetResourceVersion(f.nextRV())
	return true, live, tracker.Update(gvr, live, ns)
}

// get returns the object of gvr ns/name, or nil.
func (f *fakeCluster) get(gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	o, err := f.dyn.Tracker().Get(gvr, ns, name)
	if err != nil {
		return nil
	}
	return o.(*unstructured.Unstructured)
}

// eventually polls cond until it holds, at most 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func widget(ns, name string, size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name, "generation": int64(1), "resourceVersion": "1"},
		"spec":     map[string]any{"size": size}}}
}
