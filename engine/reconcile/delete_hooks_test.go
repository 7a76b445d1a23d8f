package reconcile

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestDeleteHooksRan: only the parent's status, written by the operator
// through the status subresource, records that deletion hooks ran, and
// only for the deletion under way. What the object's author may write (its
// annotations, the old place of the record) counts for nothing.
func TestDeleteHooksRan(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	stamp := "2026-12-01T10:00:00Z"
	parent := func(deleting bool, ann map[string]string, hooks map[string]any) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "K",
			"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "u1"}}}
		if deleting {
			o.SetDeletionTimestamp(&deleted)
		}
		o.SetAnnotations(ann)
		if hooks != nil {
			o.Object["status"] = map[string]any{"hooks": hooks}
		}
		return o
	}
	forged := map[string]string{"operator.tmplop.io/delete-hooks-ran": "true", "operator.tmplop.io/post-delete-hooks-ran": "true"}
	for name, tc := range map[string]struct {
		obj       *unstructured.Unstructured
		pre, post bool
	}{
		"nothing recorded":                      {obj: parent(true, nil, nil)},
		"the author's annotations":              {obj: parent(true, forged, nil)},
		"pre-delete recorded for this deletion": {obj: parent(true, nil, map[string]any{"pre-delete": stamp}), pre: true},
		"both recorded for this deletion":       {obj: parent(true, nil, map[string]any{"pre-delete": stamp, "post-delete": stamp}), pre: true, post: true},
		"a record of another time":              {obj: parent(true, nil, map[string]any{"pre-delete": "2026-11-30T10:00:00Z", "post-delete": "true"})},
		"a record while not being deleted":      {obj: parent(false, nil, map[string]any{"pre-delete": "", "post-delete": stamp})},
		"hook-succeeded records beside":         {obj: parent(true, forged, map[string]any{"Job/p-init": "h1", "post-delete": stamp}), post: true},
	} {
		t.Run(name, func(t *testing.T) {
			ran := deleteHooksRan(tc.obj)
			if ran["pre-delete"] != tc.pre || ran["post-delete"] != tc.post {
				t.Errorf("ran = %v, want pre-delete %v, post-delete %v", ran, tc.pre, tc.post)
			}
		})
	}
}
