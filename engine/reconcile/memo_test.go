package reconcile

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/render"
)

// thingServer is a fake API server for a kind Thing whose one ConfigMap
// holds spec.value and whose status reads it back: it holds the parent,
// puts applied children in cache, and lets a test act just before a status
// write lands (beforeStatus) or fail child applies (failApply).
type thingServer struct {
	parent       *unstructured.Unstructured
	cache        *liveCache
	rv           int
	childApplies int
	failApply    bool
	beforeStatus func(p *unstructured.Unstructured)
}

// newThingReconciler is a Reconciler of kind Thing over a thingServer.
func newThingReconciler(t *testing.T) (*Reconciler, *thingServer) {
	t.Helper()
	set, err := render.Parse(map[string]string{
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\ndata:\n  value: {{ .Spec.value | quote }}\n",
		"status.yaml":    "value: {{ dig \"ConfigMap\" .Name \"data\" \"value\" \"\" .Children | quote }}\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	k := &catalog.Kind{Name: "thing", GVK: schema.GroupVersionKind{Group: "e.io", Version: "v1", Kind: "Thing"}, Templates: set}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "e.io", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(k.GVK, meta.RESTScopeNamespace)
	srv := &thingServer{
		cache: &liveCache{objs: map[apply.Key]*unstructured.Unstructured{}},
		parent: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "Thing",
			"metadata": map[string]any{"name": "t", "namespace": "ns", "uid": "u1", "generation": int64(1), "resourceVersion": "1"},
			"spec":     map[string]any{"value": "v1"}}},
		rv: 1,
	}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	dyn.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchAction)
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(p.GetPatch()); err != nil {
			return true, nil, err
		}
		if p.GetSubresource() == "status" {
			if srv.beforeStatus != nil {
				srv.rv++
				srv.beforeStatus(srv.parent)
				srv.parent.SetResourceVersion(fmt.Sprint(srv.rv))
				srv.beforeStatus = nil // once
			}
			srv.rv++
			srv.parent.Object["status"] = u.Object["status"]
			srv.parent.SetResourceVersion(fmt.Sprint(srv.rv))
			return true, srv.parent.DeepCopy(), nil
		}
		if srv.failApply {
			return true, nil, fmt.Errorf("injected by the test")
		}
		srv.childApplies++
		srv.rv++
		u.SetResourceVersion(fmt.Sprint(srv.rv))
		u.SetUID(types.UID("uid-" + u.GetName()))
		srv.cache.objs[apply.Key{GR: p.GetResource().GroupResource(), Namespace: u.GetNamespace(), Name: u.GetName()}] = u
		return true, u.DeepCopy(), nil
	})
	r := &Reconciler{Kind: k, Client: kube.NewForClients(kube.Clients{Dynamic: dyn, Mapper: mapper}, "op"),
		Applier: apply.NewApplier(srv.cache, nil), Lookups: noLookups{}, Inventory: &memInventory{}, Recorder: &record.FakeRecorder{},
		Manager: "op", Stats: &Stats{}, Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }}
	return r, srv
}

// TestMemoAfterAChangeMeanwhile: a change someone else makes to the parent
// between the reconcile's read and its status write comes back in the
// write's response (the API server answers with the newest version). That
// version must not be remembered as reconciled: the change's event would
// find the parent "as it was" and skip it for good (the chaos run's lost
// spec changes). A write that found nothing else changed is remembered,
// and the reconcile its own event wakes does nothing.
func TestMemoAfterAChangeMeanwhile(t *testing.T) {
	cases := []struct {
		name string
		// meanwhile changes the parent on the server just before the
		// status write lands; nil: nobody else writes.
		meanwhile func(p *unstructured.Unstructured)
		// wantFull: the reconcile woken by the status write's event
		// misses memo and reconciles.
		wantFull bool
	}{
		{name: "nobody else wrote: the next reconcile does nothing"},
		{name: "the spec changed", wantFull: true, meanwhile: func(p *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(p.Object, "v2", "spec", "value")
			p.SetGeneration(p.GetGeneration() + 1)
		}},
		{name: "a label changed (templates read labels)", wantFull: true, meanwhile: func(p *unstructured.Unstructured) {
			p.SetLabels(map[string]string{"tier": "gold"})
		}},
		{name: "an annotation changed", wantFull: true, meanwhile: func(p *unstructured.Unstructured) {
			p.SetAnnotations(map[string]string{"note": "x"})
		}},
		{name: "deletion began", wantFull: true, meanwhile: func(p *unstructured.Unstructured) {
			p.SetDeletionTimestamp(&metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, srv := newThingReconciler(t)
			srv.beforeStatus = tc.meanwhile
			server, stats, cache := srv.parent, r.Stats, srv.cache

			// The first reconcile reads the parent at version 1.
			if _, err := r.Reconcile(t.Context(), server.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			if srv.childApplies != 1 {
				t.Fatalf("first reconcile: %d child applies; want 1", srv.childApplies)
			}
			// The event of the status write: the cache holds the newest
			// version, the one the write answered with.
			if _, err := r.Reconcile(t.Context(), server.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			if full := stats.Unchanged.Load() == 0; full != tc.wantFull {
				t.Errorf("reconcile of the written version: full %v (memo answered %d); want full %v", full, stats.Unchanged.Load(), tc.wantFull)
			}
			if v, _, _ := unstructured.NestedString(server.Object, "spec", "value"); v == "v2" {
				cm := cache.objs[apply.Key{GR: schema.GroupResource{Resource: "configmaps"}, Namespace: "ns", Name: "t"}]
				if got, _, _ := unstructured.NestedString(cm.Object, "data", "value"); got != "v2" || srv.childApplies != 2 {
					t.Errorf("the spec change: ConfigMap holds %q after %d applies; want v2 after 2", got, srv.childApplies)
				}
			}
		})
	}
}

// TestAdopt: the parent's metadata write sets our finalizer and
// annotations; those are no change by someone else, anything more is.
func TestAdopt(t *testing.T) {
	read := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGeneration(3)
		u.SetResourceVersion("10")
		u.SetLabels(map[string]string{"app": "web"})
		u.SetAnnotations(map[string]string{"note": "a"})
		return u
	}
	cases := []struct {
		name    string
		written func(w *unstructured.Unstructured)
		want    string
	}{
		{name: "only our writes: adopted", want: "11", written: func(w *unstructured.Unstructured) {
			w.SetFinalizers([]string{Finalizer})
			w.SetAnnotations(map[string]string{"note": "a", AnnotationPruneHeld: "f 2026-01-01T00:00:00Z"})
		}},
		{name: "a generation more: kept", want: "10", written: func(w *unstructured.Unstructured) { w.SetGeneration(4) }},
		{name: "another's finalizer: kept", want: "10", written: func(w *unstructured.Unstructured) { w.SetFinalizers([]string{"x.io/f"}) }},
		{name: "another's annotation: kept", want: "10", written: func(w *unstructured.Unstructured) {
			w.SetAnnotations(map[string]string{"note": "b", AnnotationPruneHeld: "f"})
		}},
		{name: "no version (a fake): kept", want: "10", written: func(w *unstructured.Unstructured) { w.SetResourceVersion("") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := read()
			w := read()
			w.SetResourceVersion("11")
			tc.written(w)
			adopt(obj, w, Finalizer, AnnotationPruneHeld)
			if got := obj.GetResourceVersion(); got != tc.want {
				t.Errorf("resourceVersion %s; want %s", got, tc.want)
			}
		})
	}
}

// TestStatusAfterAFailureOnAStaleCache: a reconcile fails and writes
// ApplyFailed; its retry runs before the cache shows that write, on the
// Reconciled status from before, and succeeds. Its status equals the
// cached one, but not the server's: it must be written, or ApplyFailed
// stays on the object (the status-only event that brings it to the cache
// reconciles nothing).
func TestStatusAfterAFailureOnAStaleCache(t *testing.T) {
	r, srv := newThingReconciler(t)
	server := srv.parent
	reconciled := func() string {
		conds, _, _ := unstructured.NestedSlice(server.Object, "status", "conditions")
		for _, c := range conds {
			if c := c.(map[string]any); c["type"] == "Reconciled" {
				return fmt.Sprint(c["status"], " ", c["reason"])
			}
		}
		return "none"
	}

	if _, err := r.Reconcile(t.Context(), server.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	stale := server.DeepCopy() // the cache, from here on behind the server
	if got := reconciled(); got != "True Reconciled" {
		t.Fatalf("after the first reconcile: Reconciled %s", got)
	}
	// Someone deletes the child; applying it again fails.
	clear(srv.cache.objs)
	srv.failApply = true
	if _, err := r.Reconcile(t.Context(), stale.DeepCopy()); err == nil {
		t.Fatal("the reconcile whose apply failed reported no error")
	}
	if got := reconciled(); got != "False ApplyFailed" {
		t.Fatalf("after the failed apply: Reconciled %s", got)
	}
	// The retry, on the cache that has not seen the failure's write.
	srv.failApply = false
	if _, err := r.Reconcile(t.Context(), stale.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if got := reconciled(); got != "True Reconciled" {
		t.Errorf("after the retry on a stale cache: Reconciled %s on the server; want True Reconciled", got)
	}
	// Nothing but a reconcile's own snapshot drops what is remembered of
	// that write: the watch's event of it may arrive while a retry runs on
	// an older snapshot.
	if n := len(r.written.byUID); n != 1 {
		t.Fatalf("%d written entries after the retry's write; want 1", n)
	}
	// Another retry on the same stale snapshot: its status is the one last
	// written, so there is nothing to write, and nothing to remember.
	writes := r.Stats.StatusWrites.Load()
	if _, err := r.Reconcile(t.Context(), stale.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if got := r.Stats.StatusWrites.Load(); got != writes {
		t.Errorf("%d status writes of the status last written; want none", got-writes)
	}
	if n := len(r.written.byUID); n != 0 {
		t.Errorf("%d written entries once a reconcile found the last write's status; want 0", n)
	}
	// Once the cache shows the last write, it is trusted again: nothing
	// more to write.
	writes = r.Stats.StatusWrites.Load()
	if _, err := r.Reconcile(t.Context(), server.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if got := r.Stats.StatusWrites.Load(); got != writes {
		t.Errorf("%d status writes on a cache that shows the last one; want none", got-writes)
	}
	if n := len(r.written.byUID); n != 0 {
		t.Errorf("%d written entries kept once the cache caught up", n)
	}
}
