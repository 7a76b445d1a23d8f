package status

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

type fakeWriter struct{ writes []*unstructured.Unstructured }

func (f *fakeWriter) ApplyStatus(_ context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	f.writes = append(f.writes, obj)
	return obj, nil
}

func parent(status map[string]any) *unstructured.Unstructured {
	o := map[string]any{
		"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
		"metadata": map[string]any{"name": "mc", "namespace": "ns", "generation": int64(2)},
	}
	if status != nil {
		o["status"] = status
	}
	return &unstructured.Unstructured{Object: o}
}

func TestDesiredAndWrite(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	ok := Reconciled(ReasonReconciled, "", 2)
	fail := Reconciled(ReasonRenderFailed, "deployment.yaml:7: spec.size is required", 2)

	// First reconcile: everything is written.
	obj := parent(nil)
	want, err := Desired(obj, map[string]any{"readyReplicas": int64(3)}, []metav1.Condition{ok}, t0)
	if err != nil {
		t.Fatal(err)
	}
	w := &fakeWriter{}
	if wrote, err := Write(t.Context(), w, obj, want); err != nil || !wrote {
		t.Fatalf("first write: wrote=%v err=%v", wrote, err)
	}
	if want["observedGeneration"] != int64(2) || want["readyReplicas"] != int64(3) {
		t.Fatalf("desired = %v", want)
	}

	cases := []struct {
		name      string
		rendered  map[string]any
		cond      func() any
		at        time.Time
		wantWrite bool
		check     func(t *testing.T, got map[string]any)
	}{
		{name: "same status later: no write", rendered: map[string]any{"readyReplicas": 3}, at: t0.Add(time.Hour)},
		{name: "rendered field changes: write", rendered: map[string]any{"readyReplicas": int64(4)}, at: t0.Add(time.Hour), wantWrite: true},
		{name: "failure keeps fields, flips condition", rendered: nil, at: t0.Add(2 * time.Hour), wantWrite: true,
			check: func(t *testing.T, got map[string]any) {
				if got["readyReplicas"] != int64(3) {
					t.Errorf("readyReplicas lost on failure: %v", got)
				}
				c := got["conditions"].([]any)[0].(map[string]any)
				if c["status"] != "False" || c["reason"] != ReasonRenderFailed || c["lastTransitionTime"] != "2026-01-01T12:00:00Z" {
					t.Errorf("condition = %v", c)
				}
			}},
	}
	live := parent(want)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cond := ok
			if tc.rendered == nil {
				cond = fail
			}
			got, err := Desired(live, tc.rendered, []metav1.Condition{cond}, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			w := &fakeWriter{}
			wrote, err := Write(context.Background(), w, live, got)
			if err != nil || wrote != tc.wantWrite {
				t.Fatalf("wrote=%v err=%v, want wrote=%v", wrote, err, tc.wantWrite)
			}
			if c := got["conditions"].([]any)[0].(map[string]any); cond.Status == "True" && c["lastTransitionTime"] != "2026-01-01T10:00:00Z" {
				t.Errorf("lastTransitionTime moved without a status change: %v", c)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestTemplateConditionsKept(t *testing.T) {
	obj := parent(nil)
	got, err := Desired(obj, map[string]any{"conditions": []any{
		map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicas", "message": "ok"},
	}}, []metav1.Condition{Reconciled(ReasonReconciled, "", 2)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	conds := conditionsOf(got["conditions"])
	if len(conds) != 2 || conds[0].Type != "Available" || conds[1].Type != ConditionReconciled {
		t.Fatalf("conditions = %+v", conds)
	}
}
