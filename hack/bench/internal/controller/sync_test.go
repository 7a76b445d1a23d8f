package controller

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

// TestControllerSyncWrites runs the controller's sync against fake clients
// and caches filled by hand, and counts the writes of each step: the cold
// sync writes the limit's three, the echo of its own writes before the
// caches show them writes none (expectations), the caches catching up
// write none, a changed size writes the Deployment and the status but not
// the Service (as the limit), a child deleted from the cache is applied
// again, and a deleted BenchApp is forgotten.
func TestControllerSyncWrites(t *testing.T) {
	ctx := context.Background()
	k := benchapp.Kinds[0]
	writes := map[string]int{}
	count := func(name string) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
			p, ok := a.(k8stesting.PatchAction)
			if !ok || p.GetPatchType() != types.ApplyPatchType {
				t.Errorf("%s: %s %T, want an apply patch", name, a.GetVerb(), a)
			}
			writes[name]++
			switch name {
			case "Deployment":
				return true, &appsv1.Deployment{}, nil
			case "Service":
				return true, &corev1.Service{}, nil
			}
			return true, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "bench.tmplop.io/v1", "kind": "BenchApp"}}, nil
		}
	}
	cs := fake.NewClientset()
	cs.PrependReactor("patch", "deployments", count("Deployment"))
	cs.PrependReactor("patch", "services", count("Service"))
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{benchapp.GVR: "BenchAppList"})
	dyn.PrependReactor("patch", "benchapps", count("status"))

	newIndexer := func() cache.Indexer { return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}) }
	c := &controllerClient{kind: k, cs: cs, dyn: dyn, namespace: "limit",
		apps: newIndexer(), deployments: newIndexer(), services: newIndexer(),
		state: map[cache.ObjectName]*appMemo{}, pending: map[cache.ObjectName]bool{}, done: make(chan struct{})}
	key := cache.ObjectName{Namespace: "limit", Name: benchapp.Name(7)}

	// put caches app as its informer would.
	put := func(app *unstructured.Unstructured) {
		obj, err := toBenchApp(app)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.apps.Update(obj); err != nil {
			t.Fatal(err)
		}
	}
	// echo caches the children as the limit builds them for app, as the
	// API server would send them back.
	echo := func(app *unstructured.Unstructured) {
		for _, ch := range []struct {
			indexer cache.Indexer
			u       *unstructured.Unstructured
		}{{c.deployments, benchapp.Deployment(k, app)}, {c.services, benchapp.Service(k, app)}} {
			m := &metav1.ObjectMeta{Name: ch.u.GetName(), Namespace: ch.u.GetNamespace(),
				Annotations: map[string]string{ownership.AnnotationHash: ch.u.GetAnnotations()[ownership.AnnotationHash]}}
			var obj runtime.Object = &appsv1.Deployment{ObjectMeta: *m}
			if ch.indexer == c.services {
				obj = &corev1.Service{ObjectMeta: *m}
			}
			if err := ch.indexer.Update(obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	app := func(generation, observed, size int64) *unstructured.Unstructured {
		a := servedBenchApp(observed)
		a.SetGeneration(generation)
		if err := unstructured.SetNestedField(a.Object, size, "spec", "size"); err != nil {
			t.Fatal(err)
		}
		return a
	}
	step := func(name string, want map[string]int) {
		t.Helper()
		clear(writes)
		if err := c.sync(ctx, key); err != nil {
			t.Fatalf("%s: sync: %v", name, err)
		}
		for _, w := range []string{"Deployment", "Service", "status"} {
			if writes[w] != want[w] {
				t.Errorf("%s: %d writes of the %s, want %d", name, writes[w], w, want[w])
			}
		}
	}

	put(app(3, 0, 2))
	step("cold", map[string]int{"Deployment": 1, "Service": 1, "status": 1})
	step("echo before the caches show the writes", nil)
	echo(app(3, 0, 2))
	put(app(3, 3, 2))
	step("caches caught up", nil)
	if m := c.state[key]; m.applied != [children]string{} || m.statusOf != 0 {
		t.Errorf("expectations kept once met: %+v", m)
	}
	put(app(4, 3, 5))
	step("size changed", map[string]int{"Deployment": 1, "status": 1})
	step("echo of the change", nil)
	echo(app(4, 3, 5))
	put(app(4, 4, 5))
	step("change caught up", nil)
	if err := c.services.Delete(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: benchapp.Name(7), Namespace: "limit"}}); err != nil {
		t.Fatal(err)
	}
	step("Service deleted", map[string]int{"Service": 1})
	if err := c.apps.Delete(&benchApp{ObjectMeta: metav1.ObjectMeta{Name: benchapp.Name(7), Namespace: "limit"}}); err != nil {
		t.Fatal(err)
	}
	step("BenchApp deleted", nil)
	if _, ok := c.state[key]; ok {
		t.Errorf("a deleted BenchApp's memo kept")
	}
}
