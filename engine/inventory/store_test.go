package inventory

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tmplop/operator/engine/kube"
)

func TestStore(t *testing.T) {
	app := schema.GroupKind{Group: "app.example.com", Kind: "AppService"}
	other := schema.GroupKind{Group: "e.io", Kind: "Widget"}
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	svc := schema.GroupKind{Kind: "Service"}
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "op-inventory", Namespace: "ops"},
		Data: map[string]string{key(other, svc): "recorded"}})
	client := kube.NewForClients(kube.Clients{Core: cs.CoreV1()}, "op")
	s := New(client, "ops", "op-inventory")

	if got, err := s.ChildKinds(t.Context(), app); err != nil || len(got) != 0 {
		t.Fatalf("ChildKinds = %v, %v; want none", got, err)
	}
	if err := s.Record(t.Context(), app, []schema.GroupKind{svc, deploy}); err != nil {
		t.Fatal(err)
	}
	writes := len(cs.Actions())
	if err := s.Record(t.Context(), app, []schema.GroupKind{deploy}); err != nil {
		t.Fatal(err)
	}
	if len(cs.Actions()) != writes {
		t.Errorf("recording a known kind made %d requests", len(cs.Actions())-writes)
	}
	// A new process reads what the first one recorded, and the other
	// kind's record was not touched.
	s2 := New(client, "ops", "op-inventory")
	got, err := s2.ChildKinds(t.Context(), app)
	if err != nil || len(got) != 2 || got[0] != deploy || got[1] != svc {
		t.Fatalf("ChildKinds after restart = %v, %v", got, err)
	}
	if got, _ := s2.ChildKinds(t.Context(), other); len(got) != 1 || got[0] != svc {
		t.Fatalf("other kind's record = %v", got)
	}
}

func TestStoreCreates(t *testing.T) {
	cs := fake.NewClientset()
	s := New(kube.NewForClients(kube.Clients{Core: cs.CoreV1()}, "op"), "ops", "op-inventory")
	if err := s.Record(t.Context(), schema.GroupKind{Kind: "Namespace"}, []schema.GroupKind{{Kind: "ConfigMap"}}); err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps("ops").Get(t.Context(), "op-inventory", metav1.GetOptions{})
	if err != nil || cm.Data["Namespace_ConfigMap"] != "recorded" {
		t.Fatalf("ConfigMap = %v, %v", cm, err)
	}
}
