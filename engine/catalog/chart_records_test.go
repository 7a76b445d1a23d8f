package catalog

import (
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/ownership"
)

// chartParent is an object of a chart kind, being deleted at deleted when
// it is set, with annotations ann and status.hooks hooks.
func chartParent(deleted *metav1.Time, ann map[string]string, hooks map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "K",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "u1"}}}
	o.SetDeletionTimestamp(deleted)
	o.SetAnnotations(ann)
	if hooks != nil {
		o.Object["status"] = map[string]any{"hooks": hooks}
	}
	return o
}

// TestDeleteHooksRan: only the parent's status, written by the operator
// through the status subresource, records that a chart's deletion hooks
// ran, and only for the deletion under way. What the object's author may
// write (its annotations, the old place of the record) counts for nothing.
func TestDeleteHooksRan(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	stamp := "2026-12-01T10:00:00Z"
	forged := map[string]string{"operator.tmplop.io/delete-hooks-ran": "true", "operator.tmplop.io/post-delete-hooks-ran": "true"}
	for name, tc := range map[string]struct {
		obj       *unstructured.Unstructured
		pre, post bool
	}{
		"nothing recorded":                      {obj: chartParent(&deleted, nil, nil)},
		"the author's annotations":              {obj: chartParent(&deleted, forged, nil)},
		"pre-delete recorded for this deletion": {obj: chartParent(&deleted, nil, map[string]any{"pre-delete": stamp}), pre: true},
		"both recorded for this deletion":       {obj: chartParent(&deleted, nil, map[string]any{"pre-delete": stamp, "post-delete": stamp}), pre: true, post: true},
		"a record of another time":              {obj: chartParent(&deleted, nil, map[string]any{"pre-delete": "2026-11-30T10:00:00Z", "post-delete": "true"})},
		"a record while not being deleted":      {obj: chartParent(nil, nil, map[string]any{"pre-delete": "", "post-delete": stamp})},
		"hook-succeeded records beside":         {obj: chartParent(&deleted, forged, map[string]any{"Job/p-init": "h1", "post-delete": stamp}), post: true},
	} {
		t.Run(name, func(t *testing.T) {
			ran := map[string]bool{}
			for _, step := range (chartFormat{}).DeleteSteps() {
				ran[step.Name] = step.Ran(tc.obj.Object)
			}
			if ran["pre-delete"] != tc.pre || ran["post-delete"] != tc.post {
				t.Errorf("ran = %v, want pre-delete %v, post-delete %v", ran, tc.pre, tc.post)
			}
		})
	}
}

// TestDeleteStepRecord: a step's record is the deletion's timestamp under
// its name, beside the records already there; once the status holds it,
// the step ran, and the other step did not.
func TestDeleteStepRecord(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	obj := chartParent(&deleted, nil, map[string]any{"Job/p-init": "h1"})
	steps := (chartFormat{}).DeleteSteps()
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	steps[0].Record(status, obj.Object)
	want := map[string]any{"Job/p-init": "h1", "pre-delete": "2026-12-01T10:00:00Z"}
	if got := status["hooks"].(map[string]any); !maps.Equal(got, want) {
		t.Fatalf("status.hooks = %v, want %v", got, want)
	}
	obj.Object["status"] = status
	if !steps[0].Ran(obj.Object) || steps[1].Ran(obj.Object) {
		t.Errorf("after the pre-delete record: ran %v, %v; want true, false", steps[0].Ran(obj.Object), steps[1].Ran(obj.Object))
	}
}

// TestHookSucceededRecords: a hook-succeeded hook that is Current is
// recorded with the hash of what ran; a render of the same content is then
// done (left out of the plan), one of new content is not. Nothing else is
// recorded, and Record(nil) only tells whether a record is missing.
func TestHookSucceededRecords(t *testing.T) {
	child := func(kind, name, hash string, ann map[string]string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": kind, "metadata": map[string]any{"name": name}}}
		a := map[string]string{ownership.AnnotationHash: hash}
		maps.Copy(a, ann)
		o.SetAnnotations(a)
		return o
	}
	succeeded := map[string]string{"helm.sh/hook": "post-install", "helm.sh/hook-delete-policy": "hook-succeeded"}
	preInstall := map[string]string{"helm.sh/hook": "pre-install"}
	f := chartFormat{}
	for name, tc := range map[string]struct {
		recorded map[string]any // status.hooks before
		current  []*unstructured.Unstructured
		added    bool
		hooks    map[string]any // status.hooks after Record; nil: not written
		done     map[string]bool
	}{
		"nothing recorded, nothing current": {},
		"a hook that succeeded": {current: []*unstructured.Unstructured{child("Job", "once", "h1", succeeded)}, added: true,
			hooks: map[string]any{"Job/once": "h1"}, done: map[string]bool{"h1": false}},
		"recorded, same content": {recorded: map[string]any{"Job/once": "h1"}, current: []*unstructured.Unstructured{child("Job", "once", "h1", succeeded)},
			hooks: map[string]any{"Job/once": "h1"}, done: map[string]bool{"h1": true, "h2": false}},
		"recorded, new content": {recorded: map[string]any{"Job/once": "h1"}, current: []*unstructured.Unstructured{child("Job", "once", "h2", succeeded)}, added: true,
			hooks: map[string]any{"Job/once": "h2"}, done: map[string]bool{"h1": true, "h2": false}},
		"other hooks and children are not recorded": {current: []*unstructured.Unstructured{child("Job", "migrate", "h1", preInstall), child("ConfigMap", "c", "h1", nil)}},
		"records of the deletion are kept beside": {recorded: map[string]any{"pre-delete": "2026-12-01T10:00:00Z"}, current: []*unstructured.Unstructured{child("Job", "once", "h1", succeeded)}, added: true,
			hooks: map[string]any{"pre-delete": "2026-12-01T10:00:00Z", "Job/once": "h1"}},
	} {
		t.Run(name, func(t *testing.T) {
			obj := chartParent(nil, nil, tc.recorded).Object
			if added := f.Record(nil, obj, tc.current); added != tc.added {
				t.Errorf("Record(nil) = %v, want %v", added, tc.added)
			}
			status := map[string]any{}
			f.Record(status, obj, tc.current)
			if got, _ := status["hooks"].(map[string]any); !maps.Equal(got, tc.hooks) {
				t.Errorf("status.hooks = %v, want %v", got, tc.hooks)
			}
			for hash, want := range tc.done {
				if got := f.Done(obj, child("Job", "once", hash, succeeded)); got != want {
					t.Errorf("Done(Job/once with hash %s) = %v, want %v", hash, got, want)
				}
			}
			if f.Done(obj, child("Job", "once", "h1", preInstall)) {
				t.Error("a hook without hook-succeeded is done")
			}
		})
	}
}
