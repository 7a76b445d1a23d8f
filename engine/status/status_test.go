package status

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

type fakeWriter struct{ writes []*unstructured.Unstructured }

func (f *fakeWriter) ApplyStatus(_ context.Context, obj *unstructured.Unstructured) (metav1.Object, error) {
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
	if Unchanged(obj, want) {
		t.Fatal("first status: unchanged")
	}
	if wrote, err := Write(t.Context(), w, obj, want); err != nil || wrote == nil || len(w.writes) != 1 {
		t.Fatalf("first write: wrote=%v err=%v, %d writes", wrote, err, len(w.writes))
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
			if wrote := !Unchanged(live, got); wrote != tc.wantWrite {
				t.Fatalf("changed=%v, want %v", wrote, tc.wantWrite)
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

func TestReadinessConditions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	ok := Reconciled(ReasonReconciled, "", 2)
	ready := New(ConditionReady, metav1.ConditionFalse, ReasonChildrenNotReady, ReasonChildrenNotReady, "Deployment/web 0/2 available", 2)
	progressing := New(ConditionReconciling, metav1.ConditionTrue, ReasonProgressing, ReasonProgressing, "Deployment/web 0/2 available", 2)
	obj := parent(nil)
	got, err := Desired(obj, map[string]any{"conditions": []any{
		// status.yaml may not set the engine's readiness conditions.
		map[string]any{"type": "Ready", "status": "True", "reason": "Mine", "message": "template says so"},
		map[string]any{"type": "Stalled", "status": "True", "reason": "Mine", "message": "template says so"},
		map[string]any{"type": "Available", "status": "True", "reason": "Mine", "message": "ok"},
	}}, []metav1.Condition{ok, ready, progressing}, t0)
	if err != nil {
		t.Fatal(err)
	}
	conds := conditionsOf(got["conditions"])
	var types []string
	for _, c := range conds {
		types = append(types, c.Type+"="+string(c.Status))
	}
	if want := "Available=True Reconciled=True Ready=False Reconciling=True"; strings.Join(types, " ") != want {
		t.Fatalf("conditions = %s, want %s", strings.Join(types, " "), want)
	}

	// Ready now: Reconciling goes away, also when the rest of the status
	// is kept (a failure path writes no rendered status).
	live := parent(got)
	readyNow := New(ConditionReady, metav1.ConditionTrue, ReasonReady, ReasonReady, "all 2 children are ready", 2)
	got, err = Desired(live, nil, []metav1.Condition{ok, readyNow}, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if c := Find(got, ConditionReconciling); c != nil {
		t.Errorf("Reconciling kept: %+v", c)
	}
	if c := Find(got, ConditionReady); c == nil || c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("Ready = %+v", c)
	}
	// Without a Ready from the engine (operator render's preview), a
	// template's conditions are left alone.
	got, err = Desired(parent(nil), map[string]any{"conditions": []any{
		map[string]any{"type": "Ready", "status": "True", "reason": "Mine", "message": "m"}}}, []metav1.Condition{ok}, t0)
	if err != nil || Find(got, ConditionReady) == nil {
		t.Errorf("template's Ready dropped without the engine's: %v %v", got, err)
	}
}

func TestNewCondition(t *testing.T) {
	c := New(ConditionReady, metav1.ConditionFalse, "not a reason!", ReasonChildFailed, "", 3)
	if c.Reason != ReasonChildFailed || c.Message != ReasonChildFailed || c.ObservedGeneration != 3 {
		t.Errorf("New = %+v", c)
	}
	c = New(ConditionReady, metav1.ConditionFalse, "BackoffLimitExceeded", ReasonChildFailed, strings.Repeat("x", 5000), 3)
	if c.Reason != "BackoffLimitExceeded" || len(c.Message) != maxMessage+3 {
		t.Errorf("New = %s, %d", c.Reason, len(c.Message))
	}
}

// TestHeld: a held (suspended) object's status keeps its fields and its
// observedGeneration whatever its generation, so that a spec change makes
// no write; the held condition, once written, is unchanged at the next
// generation.
func TestHeld(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	susp := New(ConditionSuspended, metav1.ConditionTrue, ReasonSuspendedByAnnotation, ReasonSuspendedByAnnotation, "held", 2)
	cases := []struct {
		name   string
		status map[string]any
		wantOG any // nil: absent
	}{
		{"reconciled before", map[string]any{"observedGeneration": int64(1), "url": "x"}, int64(1)},
		{"never reconciled", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := parent(tc.status)
			held, err := Held(obj, []metav1.Condition{susp}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if og, ok := held["observedGeneration"]; (tc.wantOG == nil && ok) || (tc.wantOG != nil && og != tc.wantOG) {
				t.Errorf("observedGeneration = %v (present %v), want %v", og, ok, tc.wantOG)
			}
			if tc.status != nil && held["url"] != "x" {
				t.Errorf("a field of the status was lost: %v", held)
			}
			// Written; then the spec changes (generation 3): nothing to write.
			obj.Object["status"] = held
			obj.SetGeneration(3)
			again, err := Held(obj, []metav1.Condition{*Find(held, ConditionSuspended)}, t0.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if !Unchanged(obj, again) {
				t.Errorf("a spec change of a held object changes its status:\nwas %v\nnow %v", held, again)
			}
		})
	}
}

// TestObservedRevision: the revision is written beside observedGeneration
// and moves with the kind's; with none known (0) the status's own is kept,
// and a status without one (a CRD whose schema strips it) stays unchanged:
// no write that the API server would strip again, reconcile after
// reconcile.
func TestObservedRevision(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	ok := Reconciled(ReasonReconciled, "", 2)
	settled := func(rev any) map[string]any {
		st, err := Desired(parent(nil), map[string]any{"a": int64(1)}, []metav1.Condition{ok}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if rev != nil {
			st[FieldObservedRevision] = rev
		}
		return st
	}
	for _, tc := range []struct {
		name      string
		status    map[string]any
		revision  int64
		want      any // nil: no field
		wantWrite bool
	}{
		{name: "first status records the revision", revision: 1, want: int64(1), wantWrite: true},
		{name: "same revision: no write", status: settled(int64(1)), revision: 1, want: int64(1)},
		{name: "a new revision: write", status: settled(int64(1)), revision: 2, want: int64(2), wantWrite: true},
		{name: "none known keeps the status's", status: settled(int64(3)), revision: 0, want: int64(3)},
		{name: "stripped by the schema, none sent: no write", status: settled(nil), revision: 0, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := parent(tc.status)
			got, err := DesiredAt(obj, map[string]any{"a": int64(1)}, []metav1.Condition{ok}, t0.Add(time.Hour), tc.revision)
			if err != nil {
				t.Fatal(err)
			}
			v, has := got[FieldObservedRevision]
			if (tc.want == nil && has) || (tc.want != nil && v != tc.want) {
				t.Errorf("observedRevision = %v (%v), want %v", v, has, tc.want)
			}
			if wrote := !Unchanged(obj, got); wrote != tc.wantWrite {
				t.Errorf("changed = %v, want %v", wrote, tc.wantWrite)
			}
		})
	}
}
