package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/plan"
)

// TestPlanSuspendedAndDrifted: the plan says what the reconcile does with
// a suspended object (nothing: no child listed) and with a child edited
// by hand since it was applied: repaired by default (a change, with the
// drifted path), reported and left alone under kind.yaml's drift: warn
// (unchanged, with the path).
func TestPlanSuspendedAndDrifted(t *testing.T) {
	ctx := t.Context()
	ns, templates := servedV1(t, []string{"held", "edited", "calm"})

	suspend := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, ownership.AnnotationSuspend)
	if _, err := env.Resource(planApps, ns).Patch(ctx, "held", types.MergePatchType, []byte(suspend), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// A field the operator applies, edited by another manager.
	if _, err := env.Resource(configMaps, ns).Patch(ctx, "edited-settings", types.MergePatchType,
		[]byte(`{"data":{"greeting":"edited by hand"}}`), metav1.PatchOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}

	byName := func(r report) map[string]plan.Object {
		m := map[string]plan.Object{}
		for _, o := range r.Objects {
			m[o.Name] = o
		}
		return m
	}
	settings := func(o plan.Object) *plan.Child {
		for i, c := range o.Children {
			if c.Kind == "ConfigMap" && c.Name == o.Name+"-settings" {
				return &o.Children[i]
			}
		}
		return nil
	}

	t.Log("drift: repair (the default): the edited child is a change, its path named")
	code, out, stderr := runPlan(t, ns, templates)
	if code != 1 {
		t.Fatalf("plan: exit %d, want 1 (the repair)\n%s\n%s", code, out, stderr)
	}
	var repair report
	decode(t, out, &repair)
	objs := byName(repair)
	if o := objs["held"]; !strings.Contains(o.Suspended, ownership.AnnotationSuspend) || len(o.Children) != 0 || o.Status != nil {
		t.Errorf("held: suspended %q, %d children, status %v: want suspended by the annotation, nothing planned", o.Suspended, len(o.Children), o.Status)
	}
	if c := settings(objs["edited"]); c == nil || c.Action != plan.Change || !slices.Contains(c.Paths, ".data.greeting") || !strings.Contains(c.Note, "drifted") {
		t.Errorf("edited's settings under drift: repair: %+v, want a change of data.greeting noted as drift", c)
	}
	if o, listed := objs["calm"]; listed {
		t.Errorf("calm is listed (%+v): nothing of it changes", o)
	}
	if repair.Total.Suspended != 1 || repair.Total.Drifted != 0 {
		t.Errorf("total: %d suspended, %d drifted; want 1 and 0", repair.Total.Suspended, repair.Total.Drifted)
	}

	t.Log("drift: warn: the edited child is reported, not changed")
	kindYAML := filepath.Join(templates, "planapp", "kind.yaml")
	data, err := os.ReadFile(kindYAML)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kindYAML, append(data, []byte("drift: warn\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runPlan(t, ns, templates)
	if code > 1 {
		t.Fatalf("plan under drift: warn: exit %d\n%s\n%s", code, out, stderr)
	}
	var warn report
	decode(t, out, &warn)
	if c := settings(byName(warn)["edited"]); c == nil || c.Action != plan.Unchanged || !slices.Contains(c.Paths, ".data.greeting") || !strings.Contains(c.Note, "drift: warn") {
		t.Errorf("edited's settings under drift: warn: %+v, want unchanged, .data.greeting reported", c)
	}
	if warn.Total.Drifted != 1 {
		t.Errorf("total under drift: warn: %d drifted, want 1", warn.Total.Drifted)
	}
	if warn.Total.Change != 0 || warn.Total.Create != 0 || warn.Total.Prune != 0 {
		t.Errorf("plan under drift: warn: %+v, want no child changed, created or pruned", warn.Total.Counts)
	}
}
