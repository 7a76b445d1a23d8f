package controller

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/ownership"
)

// parentStore is a kind's watch cache holding objs.
func parentStore(t testing.TB, objs ...*unstructured.Unstructured) cache.Store {
	t.Helper()
	s := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, u := range objs {
		c, err := cached.FromUnstructured(u.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// forged is a ConfigMap in ns labelled as the operator's child of the
// parent with uid, and annotated with parent ("" leaves either out),
// holding size bytes of data.
func forged(t testing.TB, ns, name, parent, uid string, size int) *cached.Object {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name, "resourceVersion": "7"},
		"data":     map[string]any{"k": strings.Repeat("x", size)}}}
	labels := map[string]string{ownership.LabelManagedBy: "op"}
	if uid != "" {
		labels[ownership.LabelParentUID] = uid
	}
	u.SetLabels(labels)
	if parent != "" {
		u.SetAnnotations(map[string]string{ownership.AnnotationParent: parent})
	}
	c, err := cached.FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func clusterWidget(name string) *unstructured.Unstructured {
	u := widget("", name, 1)
	unstructured.RemoveNestedField(u.Object, "metadata", "namespace")
	return u
}

// TestAdmit: what the watch of the operator's children keeps whole. Only a
// child matched to a parent served now (its kind's watch holds the parent
// with the UID the child carries, in the parent's namespace unless the
// kind allows children outside) is kept whole; a child that names a kind
// whose watch still lists waits for it, until syncTimeout after the
// watch's start.
func TestAdmit(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	listBy := t0.Add(syncTimeout)
	yes, no := func() bool { return true }, func() bool { return false }
	widgets := widgetGVK.GroupKind()
	w1 := ownership.Parent{GroupKind: widgets, Namespace: "a", Name: "w1"}.String()
	c1 := ownership.Parent{GroupKind: widgets, Name: "c1"}.String()
	listed := parentView{store: parentStore(t, widget("a", "w1", 1), clusterWidget("c1")), synced: yes, listBy: listBy}
	outside := listed
	outside.outside = true
	// A shard's watch holds only its shard's objects: w1 is another's.
	shard := parentView{store: parentStore(t, widget("a", "w2", 1)), synced: yes, listBy: listBy}
	listing := parentView{store: parentStore(t), synced: no, listBy: listBy}
	listingHasIt := parentView{store: parentStore(t, widget("a", "w1", 1)), synced: no, listBy: listBy}
	deleting := widget("a", "w1", 1)
	deleting.SetDeletionTimestamp(&metav1.Time{Time: t0})
	deleting.SetFinalizers([]string{"operator.tmplop.io/children"})
	finalizing := parentView{store: parentStore(t, deleting), synced: yes, listBy: listBy}

	tests := []struct {
		name            string
		ns, parent, uid string
		view            *parentView // the Widgets' view; nil: not served
		now             time.Time
		want            admission
	}{
		{"a child of a parent served", "a", w1, "uid-w1", &listed, t0, admitWhole},
		{"no parent annotation", "a", "", "uid-w1", &listed, t0, admitStub},
		{"no parent-uid label", "a", w1, "", &listed, t0, admitStub},
		{"a parent annotation that names nothing", "a", strings.Repeat("x", 200<<10), "uid-w1", &listed, t0, admitStub},
		{"a kind nobody serves", "a", "Nothing.example.com/a/w1", "uid-w1", &listed, t0, admitStub},
		{"a kind not served now (restarting, or its CRD not served)", "a", w1, "uid-w1", nil, t0, admitStub},
		{"the parent served, another UID", "a", w1, "uid-forged", &listed, t0, admitStub},
		{"a parent not in the watch", "a", ownership.Parent{GroupKind: widgets, Namespace: "a", Name: "w9"}.String(), "uid-w9", &listed, t0, admitStub},
		{"the parent and its UID, outside its namespace", "tenant", w1, "uid-w1", &listed, t0, admitStub},
		{"outside its namespace, the kind allowing it", "tenant", w1, "uid-w1", &outside, t0, admitWhole},
		{"a cluster-scoped child", "", w1, "uid-w1", &listed, t0, admitStub},
		{"a cluster-scoped child, the kind allowing it", "", w1, "uid-w1", &outside, t0, admitWhole},
		{"a child of a cluster-scoped parent", "a", c1, "uid-c1", &listed, t0, admitStub},
		{"a child of a cluster-scoped parent, the kind allowing it", "a", c1, "uid-c1", &outside, t0, admitWhole},
		{"a parent being deleted, held by its finalizer", "a", w1, "uid-w1", &finalizing, t0, admitWhole},
		{"start: the kind's watch still lists", "a", w1, "uid-w1", &listing, t0, admitWait},
		{"start: still listing, a forged UID waits as well", "a", w1, "uid-forged", &listing, t0, admitWait},
		{"start: still listing, the parent already there", "a", w1, "uid-w1", &listingHasIt, t0, admitWhole},
		{"start: the list did not come within syncTimeout", "a", w1, "uid-w1", &listing, listBy, admitStub},
		{"start: outside its namespace never waits", "tenant", w1, "uid-w1", &listing, t0, admitStub},
		{"sharded: a parent of another shard", "a", w1, "uid-w1", &shard, t0, admitStub},
		{"sharded: a child of this shard's parent", "a", ownership.Parent{GroupKind: widgets, Namespace: "a", Name: "w2"}.String(), "uid-w2", &shard, t0, admitWhole},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parents := func(gk schema.GroupKind) (parentView, bool) {
				if gk != widgets || tt.view == nil {
					return parentView{}, false
				}
				return *tt.view, true
			}
			if got := admit(forged(t, tt.ns, "c", tt.parent, tt.uid, 1), parents, tt.now); got != tt.want {
				t.Errorf("admit = %d, want %d", got, tt.want)
			}
		})
	}
}

// fakeParents is a kind's view that a test changes as its watch would.
type fakeParents struct {
	mu     sync.Mutex
	store  cache.Store
	synced bool
}

func (f *fakeParents) set(store cache.Store, synced bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.store, f.synced = store, synced
}

func (f *fakeParents) view(schema.GroupKind) (parentView, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	synced := f.synced
	return parentView{store: f.store, synced: func() bool { return synced }, listBy: time.Now().Add(time.Minute)}, true
}

// TestAdmitted: the transform keeps a child of a parent served whole and
// anything else as a bounded stub; a stub stays one (the watch-list
// transforms twice); a child that names a kind whose watch still lists
// waits for the list, or for the operator to stop.
func TestAdmitted(t *testing.T) {
	w1 := ownership.Parent{GroupKind: widgetGVK.GroupKind(), Namespace: "a", Name: "w1"}.String()
	parents := &fakeParents{}
	parents.set(parentStore(t, widget("a", "w1", 1)), true)
	w := &childWatches{ctx: t.Context(), parents: parents.view}
	transform := func(obj any) any {
		t.Helper()
		out, err := w.admitted(obj)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	real := forged(t, "a", "real", w1, "uid-w1", 1<<20)
	if got := transform(real).(*cached.Object); got != real || got.Stubbed() {
		t.Fatal("the child of a parent served was not kept whole")
	}
	fake := forged(t, "a", "fake", w1, "uid-forged", 1<<20)
	fake.Labels["big"] = strings.Repeat("l", 60)
	fake.Annotations[ownership.AnnotationHash] = strings.Repeat("h", 200<<10)
	stub := transform(fake).(*cached.Object)
	if !stub.Stubbed() || stub.Name != "fake" || stub.UID != "uid-fake" || stub.ResourceVersion != "7" || stub.Kind != "ConfigMap" ||
		stub.Labels[ownership.LabelParentUID] != "uid-forged" || stub.Labels["big"] != "" ||
		stub.Annotations[ownership.AnnotationParent] != w1 || len(stub.Annotations[ownership.AnnotationHash]) > 1024 {
		t.Fatalf("stub %+v", stub.ObjectMeta)
	}
	if _, err := stub.Object(); err == nil {
		t.Error("a stub decoded to an object")
	}
	if again := transform(stub); again != stub {
		t.Error("a stub transformed again was not kept as it is")
	}
	if p := (&metav1.PartialObjectMetadata{}); transform(p) != p {
		t.Error("an object of another type was changed")
	}

	// Start: the kind's watch lists; the child waits, and is kept whole
	// once the list has brought its parent.
	parents.set(parentStore(t), false)
	go func() {
		time.Sleep(100 * time.Millisecond)
		parents.set(parentStore(t, widget("a", "w1", 1)), true)
	}()
	start := time.Now()
	if got := transform(forged(t, "a", "early", w1, "uid-w1", 10)).(*cached.Object); got.Stubbed() {
		t.Error("a child listed before its kind's watch had listed was kept as a stub")
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("it waited %s, not for the list", took)
	}

	// Stopping ends the wait.
	ctx, cancel := context.WithCancel(t.Context())
	w.ctx = ctx
	parents.set(parentStore(t), false)
	cancel()
	if got := transform(forged(t, "a", "late", w1, "uid-w1", 10)).(*cached.Object); !got.Stubbed() {
		t.Error("a child judged while stopping was kept whole")
	}
}

// forgedConfigMap is forged's object, for a fake cluster.
func forgedConfigMap(t *testing.T, ns, name, parent, uid string) *unstructured.Unstructured {
	t.Helper()
	u, err := forged(t, ns, name, parent, uid, 100).Object()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// gets counts the GETs of ConfigMap ns/name the fake cluster served.
func (f *fakeCluster) gets(ns, name string) int {
	n := 0
	for _, a := range f.dyn.Actions() {
		if g, ok := a.(clienttesting.GetAction); ok && a.GetVerb() == "get" && a.GetResource() == configMapsGVR && g.GetNamespace() == ns && g.GetName() == name {
			n++
		}
	}
	return n
}

// cachedChild is what the watch of the operator's ConfigMaps holds of
// ns/name.
func cachedChild(m *Manager, ns, name string) (*cached.Object, bool) {
	cw := m.children.informers(configMapsGVR.GroupResource())
	if cw == nil {
		return nil, false
	}
	o, ok, _ := cw.ours.informer().GetIndexer().GetByKey(objectKey(ns, name))
	if !ok {
		return nil, false
	}
	c, ok := o.(*cached.Object)
	return c, ok
}

// TestForgedChildrenAreStubs: on fakes, the watch of the operator's
// ConfigMaps keeps the real child whole and the forged ones (no parent,
// another UID, outside the parent's namespace) as stubs; reading a stub
// reads the API server, reading the real child reads nothing. (The kind
// does not prune: those that carry w1's UID would be pruned as its
// children, by their labels, as before.)
func TestForgedChildrenAreStubs(t *testing.T) {
	w1 := ownership.Parent{GroupKind: widgetGVK.GroupKind(), Namespace: "a", Name: "w1"}.String()
	f := newFakeCluster(t, widget("a", "w1", 3),
		forgedConfigMap(t, "t", "another-uid", w1, "uid-forged"),
		forgedConfigMap(t, "t", "no-parent", "", "uid-w1"),
		forgedConfigMap(t, "t", "outside", w1, "uid-w1"))
	m, ctx := newTestManager(t, f, Options{})
	folder := maps.Clone(widgetFolder)
	folder["kind.yaml"] = []byte("apiVersion: e.io/v1\nkind: Widget\nprune: false\n")
	k, err := catalog.Compile("widget", "test/widget", folder)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(k); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the real child cached", func() bool { _, ok := cachedChild(m, "a", "w1-config"); return ok })
	if c, _ := cachedChild(m, "a", "w1-config"); c.Stubbed() {
		t.Error("the real child is cached as a stub")
	}
	for _, name := range []string{"another-uid", "no-parent", "outside"} {
		c, ok := cachedChild(m, "t", name)
		if !ok || !c.Stubbed() {
			t.Errorf("forged %s: cached %v, stub %v; want a stub", name, ok, ok && c.Stubbed())
		}
	}
	gr := configMapsGVR.GroupResource()
	before := f.gets("t", "another-uid")
	u, ok, err := m.children.Get(ctx, gr, "t", "another-uid")
	if err != nil || !ok || u.Object["data"] == nil || u.GetManagedFields() != nil {
		t.Fatalf("Get of a stub: %v, %v, %v", u, ok, err)
	}
	if n := f.gets("t", "another-uid") - before; n != 1 {
		t.Errorf("Get of a stub read the API server %d times, want 1", n)
	}
	before = f.gets("a", "w1-config")
	if u, ok, err := m.children.Get(ctx, gr, "a", "w1-config"); err != nil || !ok || u.Object["data"] == nil {
		t.Fatalf("Get of the real child: %v, %v, %v", u, ok, err)
	}
	if n := f.gets("a", "w1-config") - before; n != 0 {
		t.Errorf("Get of the real child read the API server %d times, want 0", n)
	}
}

// TestStubbedChildrenStillReconcile: a child of ours kept as a stub (its
// parent not in its kind's watch when its event came: the kind restarting,
// or a child moved to this shard before its parent) is never taken for
// absent: with every child a stub, a parent's child is created once, found
// up to date at the next reconcile (read from the API server, not written
// again), changed when the spec changes, and pruned when no template
// renders it any more.
func TestStubbedChildrenStillReconcile(t *testing.T) {
	f := newFakeCluster(t, widget("a", "w1", 3))
	m, ctx := newTestManager(t, f, Options{})
	m.children.parents = func(schema.GroupKind) (parentView, bool) { return parentView{}, false }
	if err := m.Start(loadWidget(t)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the child applied and cached, as a stub", func() bool {
		c, ok := cachedChild(m, "a", "w1-config")
		return ok && c.Stubbed()
	})
	stats := m.Stats(widgetGVK.GroupKind())
	applies, skips := stats.ChildApplies.Load(), stats.ChildSkips.Load()

	// A label change reconciles in full: the child is read, found as
	// rendered, and not written.
	before := f.gets("a", "w1-config")
	w := f.get(widgetGVR, "a", "w1").DeepCopy()
	w.SetLabels(map[string]string{"touched": "yes"})
	w.SetResourceVersion(f.nextRV())
	if _, err := f.dyn.Resource(widgetGVR).Namespace("a").Update(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reconcile found the child up to date", func() bool { return stats.ChildSkips.Load() > skips })
	if n := stats.ChildApplies.Load() - applies; n != 0 {
		t.Errorf("%d applies of a child as rendered, kept as a stub; want 0", n)
	}
	if f.gets("a", "w1-config") == before {
		t.Error("the child kept as a stub was not read from the API server")
	}

	w = f.get(widgetGVR, "a", "w1").DeepCopy()
	_ = unstructured.SetNestedField(w.Object, int64(4), "spec", "size")
	w.SetGeneration(2)
	w.SetResourceVersion(f.nextRV())
	if _, err := f.dyn.Resource(widgetGVR).Namespace("a").Update(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the child changed with the spec", func() bool {
		cm := f.get(configMapsGVR, "a", "w1-config")
		got, _, _ := unstructured.NestedString(cm.Object, "data", "size")
		return got == "4"
	})

	// The folder now renders another name: the old child is pruned.
	renamed := layout.Files{"kind.yaml": widgetFolder["kind.yaml"],
		"configmap.yaml": []byte(strings.Replace(string(widgetFolder["configmap.yaml"]), "-config", "-settings", 1))}
	k, err := catalog.Compile("widget", "test/widget", renamed)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(k); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new child applied and the old one pruned", func() bool {
		return f.get(configMapsGVR, "a", "w1-settings") != nil && f.get(configMapsGVR, "a", "w1-config") == nil
	})
}

// BenchmarkAdmitted is what judging a child costs each event of the watch
// of the operator's children: most are the echoes of its own applies, of
// children of a parent served.
func BenchmarkAdmitted(b *testing.B) {
	w1 := ownership.Parent{GroupKind: widgetGVK.GroupKind(), Namespace: "a", Name: "w1"}.String()
	parents := &fakeParents{}
	parents.set(parentStore(b, widget("a", "w1", 1)), true)
	w := &childWatches{ctx: b.Context(), parents: parents.view}
	for _, bb := range []struct {
		name string
		obj  *cached.Object
	}{
		{"whole", forged(b, "a", "real", w1, "uid-w1", 1000)},
		{"stub", forged(b, "a", "fake", w1, "uid-forged", 1000)},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.admitted(bb.obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
