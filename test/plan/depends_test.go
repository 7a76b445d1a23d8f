package plan

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/plan"
	"github.com/tmplop/operator/test/cluster"
)

// TestPlanDependsOn: a folder change that orders the children (the
// settings and a new ConfigMap depend on the Deployment, which on this
// control plane, with no controller, is never Current) and changes the
// settings. The plan lists the settings' change and the new ConfigMap as
// waiting for the Deployment, and the operator then makes neither: it
// reports the wait in the object's Reconciling condition, as the plan's
// status diff says it will.
func TestPlanDependsOn(t *testing.T) {
	ctx := t.Context()
	names := []string{"o-0", "o-1"}
	ns, templates := servedV1(t, names)
	if err := os.RemoveAll(filepath.Join(templates, "planapp")); err != nil {
		t.Fatal(err)
	}
	copyFolder(t, "ordered", templates)

	code, out, stderr := runPlan(t, ns, templates)
	if code != 1 {
		t.Fatalf("plan: exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	var r report
	decode(t, out, &r)
	if len(r.Objects) != len(names) {
		t.Fatalf("%d objects planned, want %d\n%s", len(r.Objects), len(names), out)
	}
	for _, o := range r.Objects {
		waits := map[string]plan.Child{}
		for _, c := range o.Children {
			if c.Waits != "" {
				waits[c.Label()] = c
			}
			if c.Kind == "Deployment" && c.Action != plan.Unchanged {
				t.Errorf("%s: the Deployment planned %s, want unchanged", o.Name, c.Action)
			}
		}
		settings, notes := waits["ConfigMap "+ns+"/"+o.Name+"-settings"], waits["ConfigMap "+ns+"/"+o.Name+"-notes"]
		want := "waits for deployment.yaml (Deployment/" + o.Name + ": "
		if settings.Action != plan.Change || !strings.Contains(settings.Waits, want) || !strings.Contains(strings.Join(settings.Paths, " "), ".data.greeting") {
			t.Errorf("%s: settings %+v, want a change of .data.greeting that %s...", o.Name, settings, want)
		}
		if notes.Action != plan.Create || !strings.Contains(notes.Waits, want) {
			t.Errorf("%s: notes %+v, want a creation that %s...", o.Name, notes, want)
		}
		if len(waits) != 2 {
			t.Errorf("%s: %d children wait, want 2", o.Name, len(waits))
		}
		if o.Status == nil || !strings.Contains(o.Status.Diff, "WaitingForDependencies") {
			t.Errorf("%s: status %+v, want the Reconciling condition's WaitingForDependencies", o.Name, o.Status)
		}
	}
	if r.Total.Waiting != 2*len(names) || r.Total.Change != len(names) || r.Total.Create != len(names) {
		t.Errorf("total %+v, want %d waiting of %d changes and %d creations", r.Total.Counts, 2*len(names), len(names), len(names))
	}

	t.Log("the operator serves the ordered folder: the waiting changes are not made")
	op := runOperator(t, ns, templates)
	cluster.Eventually(t, 2*time.Minute, "every object waiting for its Deployment", func(ctx context.Context) (bool, error) {
		for _, name := range names {
			o, err := env.Get(ctx, planApps, ns, name)
			if err != nil {
				return false, err
			}
			c := cluster.Condition(o, "Reconciling")
			if c.Reason != "WaitingForDependencies" || c.ObservedGeneration != o.GetGeneration() {
				return false, nil
			}
		}
		return true, nil
	})
	time.Sleep(2 * time.Second) // anything else the operator would write
	stop(t, op)
	for _, name := range names {
		s, err := env.Get(ctx, configMaps, ns, name+"-settings")
		if err != nil {
			t.Fatal(err)
		}
		if g, _, _ := unstructured.NestedString(s.Object, "data", "greeting"); g != "hello" {
			t.Errorf("%s-settings' greeting is %q: changed though it waits for the Deployment", name, g)
		}
		if _, err := env.Get(ctx, configMaps, ns, name+"-notes"); !apierrors.IsNotFound(err) {
			t.Errorf("%s-notes: %v, want not created while it waits", name, err)
		}
	}
}
