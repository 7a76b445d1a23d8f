package controller

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/layout"
)

// widgetFolder renders one ConfigMap per Widget, holding its size.
var widgetFolder = layout.Files{
	"kind.yaml": []byte("apiVersion: e.io/v1\nkind: Widget\n"),
	"configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\n" +
		"data:\n  size: {{ .Spec.size | quote }}\n"),
}

func loadWidget(t *testing.T) *catalog.Kind {
	t.Helper()
	k, err := catalog.Compile("widget", "test/widget", widgetFolder)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newTestManager(t *testing.T, f *fakeCluster, opts Options) (*Manager, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	opts.FieldManager = "op"
	opts.StateNamespace = "ops"
	m, err := NewManagerForClient(ctx, f.client, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); m.Wait() })
	return m, ctx
}

// TestManagerOnFakes: a kind served on a fake dynamic client, through the
// whole loop: the parents' watch enqueues an object, its child is
// applied; a change of spec is applied again; a child deleted by hand is
// seen by the children's watch, routed to its parent (typed keys all the
// way) and applied again. Stopping the kind for good stops every watch.
func TestManagerOnFakes(t *testing.T) {
	f := newFakeCluster(t, widget("a", "w1", 3))
	m, ctx := newTestManager(t, f, Options{})
	if err := m.SyncFolders(ctx, fakeFolders{loadWidget(t)}); err != nil {
		t.Fatal(err)
	}
	size := func(want string) func() bool {
		return func() bool {
			cm := f.get(configMapsGVR, "a", "w1-config")
			if cm == nil {
				return false
			}
			got, _, _ := unstructured.NestedString(cm.Object, "data", "size")
			return got == want
		}
	}
	eventually(t, "the child applied", size("3"))
	eventually(t, "the manager ready", func() bool { return m.Ready() == nil })

	w := f.get(widgetGVR, "a", "w1").DeepCopy()
	_ = unstructured.SetNestedField(w.Object, int64(4), "spec", "size")
	w.SetGeneration(2)
	w.SetResourceVersion(f.nextRV())
	if _, err := f.dyn.Resource(widgetGVR).Namespace("a").Update(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the child applied again after a change of spec", size("4"))

	if err := f.dyn.Resource(configMapsGVR).Namespace("a").Delete(ctx, "w1-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the child deleted by hand applied again", size("4"))

	if n := m.watches.size(); n != 3 {
		t.Errorf("%d watches, want 3: the widgets, and the ConfigMaps ours and others'", n)
	}
	m.Stop(widgetGVK.GroupKind())
	if n := m.watches.size(); n != 0 {
		t.Errorf("%d watches after the kind stopped for good, want 0", n)
	}
}

// TestRestartKeepsChildWatches: a kind restarted with a changed folder
// keeps the children's watches it held (no new list); its parents' watch
// is a new one.
func TestRestartKeepsChildWatches(t *testing.T) {
	f := newFakeCluster(t, widget("a", "w1", 3))
	m, _ := newTestManager(t, f, Options{})
	if err := m.Start(loadWidget(t)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the child applied", func() bool { return f.get(configMapsGVR, "a", "w1-config") != nil })
	m.children.mu.Lock()
	before := m.children.byGR[configMapsGVR.GroupResource()]
	m.children.mu.Unlock()
	if err := m.Start(loadWidget(t)); err != nil {
		t.Fatal(err)
	}
	m.children.mu.Lock()
	after := m.children.byGR[configMapsGVR.GroupResource()]
	m.children.mu.Unlock()
	if before == nil || after != before || before.ours.informer().IsStopped() {
		t.Fatal("a restart stopped the children's watches")
	}
	m.mu.Lock()
	kc := m.kinds[widgetGVK.GroupKind()]
	m.mu.Unlock()
	eventually(t, "the restarted kind listed", func() bool { _, synced := kc.synced(); return synced })
}
