package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func folderConfigMap(ns, name string, labels map[string]any, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name, "labels": labels, "resourceVersion": "1"},
		"data":     data}}
}

// TestConfigMapFolders: kind folders from the labelled ConfigMaps of one
// namespace, watched in the Manager's watch set: a new folder is told
// (Changed) and loads; the watch ends with Start's context.
func TestConfigMapFolders(t *testing.T) {
	folder := map[string]any{}
	for name, data := range widgetFolder {
		folder[name] = string(data)
	}
	f := newFakeCluster(t,
		folderConfigMap("ops", "widget", map[string]any{"folder": "true"}, folder),
		folderConfigMap("ops", "unlabelled", map[string]any{}, folder),
		folderConfigMap("elsewhere", "widget", map[string]any{"folder": "true"}, folder))
	m, ctx := newTestManager(t, f, Options{})
	c := NewConfigMapFolders(m, "ops", "folder=true", nil)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	kinds, skipped, err := c.Load(Loading{})
	if err != nil || len(skipped) != 0 || len(kinds) != 1 {
		t.Fatalf("kinds %v, skipped %v, %v", kinds, skipped, err)
	}
	if k := kinds[0]; k.Dir != "configmap/ops/widget" || k.GVK != widgetGVK {
		t.Fatalf("kind %s from %s", k.GVK, k.Dir)
	}
	<-c.Changed() // the initial list
	broken := folderConfigMap("ops", "broken", map[string]any{"folder": "true"}, map[string]any{"kind.yaml": "kind: [\n"})
	if err := f.dyn.Tracker().Create(configMapsGVR, broken, "ops"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("a new folder was not told")
	}
	eventually(t, "the new folder loaded", func() bool {
		_, skipped, _ := c.Load(Loading{})
		return len(skipped) == 1 && skipped[0].Dir == "configmap/ops/broken"
	})
}
