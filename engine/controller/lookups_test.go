package controller

import (
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/render"
)

// TestLookupsOnFakes: a parent reads what kind.yaml declares, in its own
// namespace, from a watch of the set started for it; a change of what it
// read routes the parent (by its typed key); forgetting the parent
// releases the watch.
func TestLookupsOnFakes(t *testing.T) {
	f := newFakeCluster(t,
		folderConfigMap("a", "settings", nil, map[string]any{"k": "v"}),
		folderConfigMap("b", "other", nil, map[string]any{"k": "w"}))
	m, ctx := newTestManager(t, f, Options{})
	routed := make(chan parentRef, 10)
	m.lookups.route = func(p parentRef) { routed <- p }
	k := &kindLookups{w: m.lookups, client: f.client, kind: &catalog.Kind{Spec: catalog.Spec{Lookups: []catalog.LookupSpec{{APIVersion: "v1", Kind: "ConfigMap"}}}}, bounds: m.bounds()}
	l, err := k.For(ctx, widget("a", "w1", 1))
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Get("v1", "ConfigMap", "a", "settings")
	if err != nil || got["data"].(map[string]any)["k"] != "v" {
		t.Fatalf("get: %v, %v", got, err)
	}
	if items, err := l.List("v1", "ConfigMap", "a", ""); err != nil || len(items) != 1 {
		t.Fatalf("list: %v, %v", items, err)
	}
	for name, read := range map[string]func() error{
		"another namespace": func() error { _, err := l.Get("v1", "ConfigMap", "b", "other"); return err },
		"undeclared kind":   func() error { _, err := l.Get("apps/v1", "Deployment", "a", "x"); return err },
	} {
		if err := read(); !errors.Is(err, render.ErrLookupRefused) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	if n := m.watches.size(); n != 1 {
		t.Fatalf("%d watches, want the ConfigMaps of namespace a", n)
	}

	cm := folderConfigMap("a", "settings", nil, map[string]any{"k": "changed"})
	cm.SetResourceVersion(f.nextRV())
	if err := f.dyn.Tracker().Update(configMapsGVR, cm, "a"); err != nil {
		t.Fatal(err)
	}
	want := parentRef{gk: widgetGVK.GroupKind(), name: cache.NewObjectName("a", "w1")}
	select {
	case p := <-routed:
		if p != want {
			t.Fatalf("routed %v, want %v", p, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader was not routed")
	}
	m.lookups.forget(want)
	if n := m.watches.size(); n != 0 {
		t.Fatalf("%d watches once the only reader is forgotten", n)
	}
}
