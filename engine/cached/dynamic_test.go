package cached

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// TestDynamicListWatch: a fake dynamic client's objects, listed and
// watched into Objects as the informers cache them, cut by the selector
// (which the fake's watch ignores): an object that stops matching is
// deleted.
func TestDynamicListWatch(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cm := func(name, managed string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "ns", "managedFields": []any{map[string]any{"manager": "m"}}},
			"data":     map[string]any{"k": name}}}
		if managed != "" {
			u.SetLabels(map[string]string{"managed": managed})
		}
		return u
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "ConfigMapList"}, cm("a", "op"), cm("b", ""))
	lw := DynamicListWatch(dyn, gvr, "ns", "managed=op")
	l, err := lw.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := l.(*List).Items
	if len(items) != 1 || items[0].Name != "a" || items[0].ManagedFields != nil {
		t.Fatalf("list: %+v", items)
	}
	if u, err := items[0].Object(); err != nil || u.Object["data"].(map[string]any)["k"] != "a" || u.GetManagedFields() != nil {
		t.Fatalf("decoded: %v, %v", u, err)
	}

	w, err := lw.Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx := t.Context()
	cms := dyn.Resource(gvr).Namespace("ns")
	if _, err := cms.Create(ctx, cm("c", ""), metav1.CreateOptions{}); err != nil { // not selected: no event
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, cm("d", "op"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Update(ctx, cm("a", "other"), metav1.UpdateOptions{}); err != nil { // no longer selected
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for !seen[string(watch.Deleted)+" a"] {
		select {
		case ev := <-w.ResultChan():
			seen[string(ev.Type)+" "+ev.Object.(*Object).Name] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("events %v: timed out waiting for a's deletion", seen)
		}
	}
	if !seen[string(watch.Added)+" d"] || seen[string(watch.Added)+" c"] {
		t.Fatalf("events %v: want d added, c (not selected) never", seen)
	}

	ml, err := DynamicMetadataListWatch(dyn, gvr, "ns", "!managed").List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if md := ml.(*metav1.PartialObjectMetadataList).Items; len(md) != 2 || md[0].Kind != "ConfigMap" {
		t.Fatalf("metadata list: %+v", md)
	}
}
