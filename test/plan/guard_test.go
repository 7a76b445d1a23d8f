package plan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tmplop/operator/engine/plan"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// TestPlanDeletionGuard: a folder change that would delete two of each
// object's three children, its spec unchanged. The plan says the
// deletion guard holds the prunes back (the hold begins with the
// reconcile), and the operator, run with an hour's confirmation delay,
// then holds them back indeed: it creates the new child and deletes
// nothing. A second plan tells the hold begun at the time the object
// records. With a delay of one second, both the plan and the operator
// confirm the prune: the plan lists the children as pruned, not held, and
// the operator deletes exactly those.
func TestPlanDeletionGuard(t *testing.T) {
	ctx := t.Context()
	names := []string{"g-0", "g-1", "g-2"}
	ns, templates := servedV1(t, names)
	run := func(delay string) *harness.Operator {
		return runOperator(t, ns, templates, "--prune-confirm-delay", delay)
	}

	t.Log("the folder drops the Deployment and the settings; the notes are new")
	if err := os.RemoveAll(filepath.Join(templates, "planapp")); err != nil {
		t.Fatal(err)
	}
	copyFolder(t, "shrunk", templates)
	doomed := func(name string) []string {
		return []string{"Deployment " + ns + "/" + name, "ConfigMap " + ns + "/" + name + "-settings"}
	}

	code, out, stderr := runPlanAs(t, env.Kubeconfig, ns, templates, "--prune-confirm-delay", "1h")
	if code != 1 {
		t.Fatalf("plan: exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	var first report
	decode(t, out, &first)
	checkHeld(t, "first plan", first, names, doomed, true)

	t.Log("the operator, an hour's delay: the notes created, nothing deleted, the hold recorded")
	op := run("1h")
	since := map[string]time.Time{}
	cluster.Eventually(t, 2*time.Minute, "every object's prune held", func(ctx context.Context) (bool, error) {
		for _, name := range names {
			o, err := env.Get(ctx, planApps, ns, name)
			if err != nil {
				return false, err
			}
			c := cluster.Condition(o, "PruneHeld")
			if c.Status != metav1.ConditionTrue || c.Reason != "MassDeletion" {
				return false, nil
			}
			since[name] = c.LastTransitionTime.Time
			if _, err := env.Get(ctx, configMaps, ns, name+"-notes"); err != nil {
				return false, client(err)
			}
		}
		return true, nil
	})
	stop(t, op)
	for _, name := range names {
		if _, err := env.Get(ctx, deployments, ns, name); err != nil {
			t.Errorf("Deployment %s under the hold: %v, want it kept", name, err)
		}
		if _, err := env.Get(ctx, configMaps, ns, name+"-settings"); err != nil {
			t.Errorf("ConfigMap %s-settings under the hold: %v, want it kept", name, err)
		}
	}

	t.Log("a second plan: still held, since the time the object records")
	code, out, stderr = runPlanAs(t, env.Kubeconfig, ns, templates, "--prune-confirm-delay", "1h")
	if code != 1 {
		t.Fatalf("second plan: exit %d, want 1 (the held prunes are changes deferred)\n%s\n%s", code, out, stderr)
	}
	var second report
	decode(t, out, &second)
	checkHeld(t, "second plan", second, names, doomed, false)
	for _, o := range second.Objects {
		if h := o.PruneHeld; h != nil && !h.Since.Truncate(time.Second).Equal(since[o.Name].Truncate(time.Second)) {
			t.Errorf("second plan: %s held since %s, the object's condition says %s", o.Name, h.Since, since[o.Name])
		}
	}

	t.Log("a one-second delay: the plan and the operator confirm the prune")
	time.Sleep(time.Second)
	code, out, stderr = runPlanAs(t, env.Kubeconfig, ns, templates, "--prune-confirm-delay", "1s")
	if code != 1 {
		t.Fatalf("confirming plan: exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	var confirm report
	decode(t, out, &confirm)
	var planned []string
	for _, o := range confirm.Objects {
		if o.PruneHeld != nil {
			t.Errorf("confirming plan: %s still held: %+v", o.Name, o.PruneHeld)
		}
		for _, c := range o.Children {
			if c.Action == plan.Prune && !c.Held {
				planned = append(planned, c.Label())
			}
		}
	}
	var want []string
	for _, name := range names {
		want = append(want, doomed(name)...)
	}
	if missing, extra := setDiff(want, planned); len(missing)+len(extra) > 0 {
		t.Errorf("confirming plan: prunes not planned %q, planned beyond the doomed %q", missing, extra)
	}
	if confirm.Total.Prune != len(want) || confirm.Total.Held != 0 {
		t.Errorf("confirming plan: %d to prune, %d held; want %d and 0", confirm.Total.Prune, confirm.Total.Held, len(want))
	}

	op = run("1s")
	cluster.Eventually(t, 2*time.Minute, "the doomed children deleted, the hold cleared", func(ctx context.Context) (bool, error) {
		for _, name := range names {
			if _, err := env.Get(ctx, deployments, ns, name); !apierrors.IsNotFound(err) {
				return false, client(err)
			}
			if _, err := env.Get(ctx, configMaps, ns, name+"-settings"); !apierrors.IsNotFound(err) {
				return false, client(err)
			}
			o, err := env.Get(ctx, planApps, ns, name)
			if err != nil {
				return false, err
			}
			if cluster.Condition(o, "PruneHeld").Status != "" {
				return false, nil
			}
		}
		return true, nil
	})
	stop(t, op)
	for _, name := range names {
		if _, err := env.Get(ctx, configMaps, ns, name+"-notes"); err != nil {
			t.Errorf("ConfigMap %s-notes after the prune: %v, want it kept", name, err)
		}
	}
}

// checkHeld checks a plan of the shrunk folder under the hold: for each
// object, the notes created and the doomed children listed as pruned,
// held; the hold beginning with this reconcile or not (begins).
func checkHeld(t *testing.T, what string, r report, names []string, doomed func(string) []string, begins bool) {
	t.Helper()
	if len(r.Objects) != len(names) {
		t.Fatalf("%s: %d objects listed, want %d", what, len(r.Objects), len(names))
	}
	for _, o := range r.Objects {
		h := o.PruneHeld
		if h == nil || h.Reason != "MassDeletion" || h.Begins != begins || !h.Until.After(h.Since) || !strings.Contains(h.Message, "2 of 3 children") {
			t.Errorf("%s: %s's hold %+v, want MassDeletion of 2 of 3 children, begins %v", what, o.Name, h, begins)
		}
		var held, created []string
		for _, c := range o.Children {
			switch {
			case c.Action == plan.Prune && c.Held && strings.Contains(c.Note, "deletion guard"):
				held = append(held, c.Label())
			case c.Action == plan.Prune:
				t.Errorf("%s: %s: %s pruned without the hold", what, o.Name, c.Label())
			case c.Action == plan.Create:
				created = append(created, c.Label())
			}
		}
		slices.Sort(held)
		want := doomed(o.Name)
		slices.Sort(want)
		if !slices.Equal(held, want) {
			t.Errorf("%s: %s holds back %q, want %q", what, o.Name, held, want)
		}
		wantCreated := []string{}
		if begins {
			wantCreated = []string{"ConfigMap " + o.Namespace + "/" + o.Name + "-notes"}
		}
		if fmt.Sprint(created) != fmt.Sprint(wantCreated) {
			t.Errorf("%s: %s creates %q, want %q", what, o.Name, created, wantCreated)
		}
	}
	if r.Total.Prune != 0 || r.Total.Held != 2*len(names) {
		t.Errorf("%s: %d to prune, %d held; want 0 and %d", what, r.Total.Prune, r.Total.Held, 2*len(names))
	}
}

// client is err unless the object is merely not there yet.
func client(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
