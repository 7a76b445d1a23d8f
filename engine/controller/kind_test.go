package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestNeedsReconcile(t *testing.T) {
	base := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "a/v1", "kind": "A",
			"metadata": map[string]any{"name": "x", "generation": int64(1), "uid": "u1", "resourceVersion": "1"},
			"spec":     map[string]any{"size": int64(1)},
		}}
		return u
	}
	cases := []struct {
		name   string
		mutate func(u *unstructured.Unstructured)
		want   bool
	}{
		{"status only", func(u *unstructured.Unstructured) { u.Object["status"] = map[string]any{"ready": int64(3)} }, false},
		{"resync, nothing changed", func(*unstructured.Unstructured) {}, false},
		{"generation", func(u *unstructured.Unstructured) { u.SetGeneration(2) }, true},
		{"labels", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"a": "b"}) }, true},
		{"annotations", func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"a": "b"}) }, true},
		{"deletion", func(u *unstructured.Unstructured) { now := metav1.Now(); u.SetDeletionTimestamp(&now) }, true},
		{"finalizers while not deleting", func(u *unstructured.Unstructured) { u.SetFinalizers([]string{"x"}) }, false},
		{"re-created", func(u *unstructured.Unstructured) { u.SetUID("u2") }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			cur.SetResourceVersion("2")
			tc.mutate(cur)
			if got := needsReconcile(old, cur); got != tc.want {
				t.Errorf("needsReconcile = %v, want %v", got, tc.want)
			}
		})
	}
}
