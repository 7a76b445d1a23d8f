package app

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/tmplop/operator/engine/plan"
	"github.com/tmplop/operator/internal/testsupport/golden"
)

// TestWritePlan: the text a person reads, against a golden file: every
// action, a note, an error, a suspended object, a child that waits for
// what it depends on, and the deletion guard's hold, beginning with this
// reconcile and begun earlier.
func TestWritePlan(t *testing.T) {
	since := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	held := func(name string) plan.Child {
		return plan.Child{Template: "settings.yaml", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: name,
			Action: plan.Prune, Held: true, Note: "held back by the deletion guard until 2026-11-29T05:00:30Z",
			Diff: "--- ConfigMap ns/" + name + "\n+++ /dev/null\n@@ -1 +0,0 @@\n-data: {}\n"}
	}
	objects := []plan.Object{
		{Kind: "app", Namespace: "ns", Name: "changed", Finalizer: "operator.tmplop.io/children",
			Children: []plan.Child{
				{Template: "deployment.yaml", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "changed",
					Action: plan.Change, Paths: []string{".spec.replicas"},
					Diff: "--- Deployment ns/changed\n+++ Deployment ns/changed\n@@ -1 +1 @@\n-replicas: 1\n+replicas: 2\n"},
				{Template: "settings.yaml", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "changed-settings",
					Action: plan.Create, Local: true},
				{Template: "job.yaml", APIVersion: "batch/v1", Kind: "Job", Namespace: "ns", Name: "changed-hook",
					Action: plan.Change, Hook: "pre-upgrade", Note: "deleted and created anew"},
				{Template: "notes.yaml", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "changed-notes", Action: plan.Create,
					Waits: "notes.yaml waits for deployment.yaml (Deployment/changed: InProgress: 1/2 available)"},
				{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "changed-old", Action: plan.Prune},
				{Template: "service.yaml", APIVersion: "v1", Kind: "Service", Namespace: "ns", Name: "changed",
					Action: plan.Change, Error: "apply: the API server refused"},
			},
			Status: &plan.Status{Paths: []string{".status.size"}, Diff: "--- status\n+++ status\n@@ -1 +1 @@\n-size: 1\n+size: 2\n"}},
		{Kind: "app", Namespace: "ns", Name: "guarded", Children: []plan.Child{held("guarded-a"), held("guarded-b")},
			PruneHeld: &plan.Hold{Reason: "MassDeletion", Message: "2 of 3 children would be deleted without a change of spec (...)",
				Since: since, Until: since.Add(30 * time.Second), Begins: true}},
		{Kind: "app", Namespace: "ns", Name: "still-guarded", Children: []plan.Child{held("still-guarded-a"), held("still-guarded-b")},
			PruneHeld: &plan.Hold{Reason: "MassDeletion", Message: "2 of 3 children would be deleted without a change of spec (...)",
				Since: since, Until: since.Add(30 * time.Second)}},
		{Kind: "app", Namespace: "ns", Name: "resting", Suspended: "the annotation operator.tmplop.io/suspend: \"true\""},
		{Kind: "app", Namespace: "ns", Name: "broken", Error: "render: deployment.yaml:3: nil pointer"},
	}
	r := planReport{Objects: objects}
	for i := range objects {
		r.Total.add(&objects[i])
	}
	r.Total.Seconds = 1.25
	var got bytes.Buffer
	writePlan(&got, r, false)
	golden.Check(t, filepath.Join("testdata", "plan-output.golden.txt"), got.Bytes())

	// A held prune is a change, deferred: the exit code says so whether
	// the hold begins now or began earlier.
	if !objects[1].Changed() || !objects[2].Changed() {
		t.Errorf("changed: hold begins %v, began earlier %v; want both", objects[1].Changed(), objects[2].Changed())
	}
	if c := objects[1].Counts(); c.Prune != 0 || c.Held != 2 {
		t.Errorf("counts of a held prune: %+v, want 0 to prune, 2 held", c)
	}
	if c := objects[0].Counts(); c.Create != 2 || c.Waiting != 1 {
		t.Errorf("counts with a waiting creation: %+v, want 2 to create, 1 of them waiting", c)
	}
}
