package reconcile

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/status"
)

// TestDriftCondition: drift: warn reports the drifted children in
// Drifted=True, with an Event only when the report changes; Drifted turns
// False once none is drifted, and an object that never drifted gets no
// condition. drift: repair reports nothing in the status.
func TestDriftCondition(t *testing.T) {
	cm := apply.Key{GR: schema.GroupResource{Resource: "configmaps"}, Namespace: "ns", Name: "web"}
	one := map[int]drifted{1: {template: "cm.yaml", key: cm, paths: []string{"/data/a", "/data/b"}}}
	many := drifted{template: "cm.yaml", key: cm}
	for i := range 12 {
		many.paths = append(many.paths, "/data/k"+string(rune('a'+i)))
	}
	const oneMsg = "1 child edited in fields the operator applies, left as they are (kind.yaml drift: warn) until their render changes: cm.yaml: configmaps ns/web: /data/a, /data/b"
	cases := []struct {
		name       string
		drift      string
		current    *metav1.Condition
		drifts     map[int]drifted
		wantStatus metav1.ConditionStatus // "": no condition
		wantMsg    string
		wantEvents int
	}{
		{name: "never drifted", drift: "warn"},
		{name: "drifted", drift: "warn", drifts: one, wantStatus: metav1.ConditionTrue, wantMsg: oneMsg, wantEvents: 1},
		{name: "still drifted the same: no Event", drift: "warn", drifts: one,
			current:    &metav1.Condition{Type: status.ConditionDrifted, Status: metav1.ConditionTrue, Reason: status.ReasonDrifted, Message: oneMsg},
			wantStatus: metav1.ConditionTrue, wantMsg: oneMsg},
		{name: "drifted otherwise: an Event", drift: "warn", drifts: map[int]drifted{0: many},
			current:    &metav1.Condition{Type: status.ConditionDrifted, Status: metav1.ConditionTrue, Reason: status.ReasonDrifted, Message: oneMsg},
			wantStatus: metav1.ConditionTrue, wantMsg: "/data/kj and 2 more", wantEvents: 1},
		{name: "in sync again", drift: "warn",
			current:    &metav1.Condition{Type: status.ConditionDrifted, Status: metav1.ConditionTrue, Reason: status.ReasonDrifted, Message: oneMsg},
			wantStatus: metav1.ConditionFalse, wantMsg: "every child"},
		{name: "repair: no condition", drift: "", drifts: one},
		{name: "switched to repair", drift: "repair", drifts: one,
			current:    &metav1.Condition{Type: status.ConditionDrifted, Status: metav1.ConditionTrue, Reason: status.ReasonDrifted, Message: oneMsg},
			wantStatus: metav1.ConditionFalse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			r := &Reconciler{Kind: &catalog.Kind{Spec: catalog.Spec{Drift: tc.drift}}, Recorder: rec, Stats: &Stats{}}
			obj := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "web", "generation": int64(1)}}}
			if tc.current != nil {
				c, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.current)
				if err != nil {
					t.Fatal(err)
				}
				obj.Object["status"] = map[string]any{"conditions": []any{c}}
			}
			got := r.driftCondition(obj, tc.drifts, 2)
			switch {
			case tc.wantStatus == "" && got != nil:
				t.Fatalf("a condition: %+v", got)
			case tc.wantStatus != "" && (got == nil || got.Status != tc.wantStatus || !strings.Contains(got.Message, tc.wantMsg)):
				t.Fatalf("got %+v, want %s mentioning %q", got, tc.wantStatus, tc.wantMsg)
			}
			if n := len(rec.Events); n != tc.wantEvents {
				t.Errorf("%d Events, want %d", n, tc.wantEvents)
			}
		})
	}
}
