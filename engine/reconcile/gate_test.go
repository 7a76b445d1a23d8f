package reconcile

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/health"
)

// TestGate: the apply step's waits, driven as the reconcile and operator
// plan drive them: in Order, Hold before each child, Done after it with
// the object the step leaves.
func TestGate(t *testing.T) {
	checker, err := health.NewChecker(nil)
	if err != nil {
		t.Fatal(err)
	}
	kind := &catalog.Kind{Name: "app", GVK: schema.GroupVersionKind{Group: "e.io", Version: "v1", Kind: "App"}, Health: checker}
	obj := func(apiVersion, kind, name string, st map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName(name)
		u.SetGeneration(1)
		if st != nil {
			u.Object["status"] = st
		}
		return u
	}
	complete := map[string]any{"succeeded": int64(1), "conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}
	running := map[string]any{"active": int64(1)}
	plan := &Plan{
		Children: []Child{
			{Template: "deployment.yaml", Object: obj("apps/v1", "Deployment", "d", nil)},
			{Template: "job.yaml", Object: obj("batch/v1", "Job", "m", nil)},
			{Template: "service.yaml", Object: obj("v1", "Service", "s", nil)},
		},
		DependsOn: map[string][]string{"deployment.yaml": {"job.yaml"}, "service.yaml": {"deployment.yaml"}},
	}
	// step is one child in the step: upToDate, served, and the object the
	// step leaves (when it is not held back; held back, it stays as live).
	type step struct {
		upToDate, served bool
		after, live      *unstructured.Unstructured
	}
	for _, tc := range []struct {
		name  string
		steps map[string]step // by template
		// want: what each template waits for ("" for nothing).
		want    map[string]string
		waiting bool
	}{
		{
			name: "the Job just created: the rest wait, one after the other",
			steps: map[string]step{
				"job.yaml":        {served: true, after: obj("batch/v1", "Job", "m", running)},
				"deployment.yaml": {served: true},
				"service.yaml":    {served: true},
			},
			want: map[string]string{
				"deployment.yaml": "deployment.yaml waits for job.yaml (Job/m: InProgress",
				"service.yaml":    "service.yaml waits for deployment.yaml (Deployment/d: not applied yet, it waits too)",
			},
			waiting: true,
		},
		{
			name: "the Job complete: the Deployment applied, the Service waits for it to be Current",
			steps: map[string]step{
				"job.yaml":        {upToDate: true, served: true, after: obj("batch/v1", "Job", "m", complete)},
				"deployment.yaml": {served: true, after: obj("apps/v1", "Deployment", "d", nil)},
				"service.yaml":    {served: true},
			},
			want: map[string]string{
				"service.yaml": "service.yaml waits for deployment.yaml (Deployment/d: InProgress",
			},
			waiting: true,
		},
		{
			name: "a live Deployment not ready yet: the Service waits, and the Deployment is what status.yaml sees",
			steps: map[string]step{
				"job.yaml":        {upToDate: true, served: true, after: obj("batch/v1", "Job", "m", complete)},
				"deployment.yaml": {upToDate: true, served: true, after: obj("apps/v1", "Deployment", "d", map[string]any{"observedGeneration": int64(1), "replicas": int64(1)})},
				"service.yaml":    {served: true, live: obj("v1", "Service", "s", nil)},
			},
			want: map[string]string{
				"service.yaml": "service.yaml waits for deployment.yaml (Deployment/d: InProgress",
			},
			waiting: true,
		},
		{
			name: "up to date waits for nothing, even behind a running Job",
			steps: map[string]step{
				"job.yaml":        {served: true, after: obj("batch/v1", "Job", "m", running)},
				"deployment.yaml": {upToDate: true, served: true, after: obj("apps/v1", "Deployment", "d", nil)},
				"service.yaml":    {upToDate: true, served: true, after: obj("v1", "Service", "s", nil)},
			},
			want: map[string]string{},
		},
		{
			name: "up to date, its kind no longer in discovery: no wait",
			steps: map[string]step{
				"job.yaml":        {upToDate: true, served: false, after: obj("batch/v1", "Job", "m", complete)},
				"deployment.yaml": {upToDate: true, served: true, after: obj("apps/v1", "Deployment", "d", nil)},
				"service.yaml":    {upToDate: true, served: true, after: obj("v1", "Service", "s", nil)},
			},
			want:    map[string]string{},
			waiting: false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGate(kind, plan)
			got := map[string]string{}
			for _, i := range g.Order() {
				tmpl := plan.Children[i].Template
				s := tc.steps[tmpl]
				why, waits := g.Hold(i, s.upToDate, s.served)
				if waits {
					got[tmpl] = why
					g.Done(i, s.live)
					continue
				}
				g.Done(i, s.after)
			}
			for tmpl, want := range tc.want {
				if !strings.HasPrefix(got[tmpl], want) {
					t.Errorf("%s waits %q, want %q", tmpl, got[tmpl], want)
				}
			}
			for tmpl, why := range got {
				if _, ok := tc.want[tmpl]; !ok {
					t.Errorf("%s waits %q, want it applied", tmpl, why)
				}
			}
			if g.Waiting() != tc.waiting {
				t.Errorf("Waiting() = %v, want %v", g.Waiting(), tc.waiting)
			}
		})
	}
}

// TestGateUnservedAndDeferred: a child whose kind is not served yet waits
// for its CRD (and the reconcile looks again soon); a child deleted to be
// created anew holds back what depends on it.
func TestGateUnservedAndDeferred(t *testing.T) {
	checker, err := health.NewChecker(nil)
	if err != nil {
		t.Fatal(err)
	}
	kind := &catalog.Kind{Name: "app", GVK: schema.GroupVersionKind{Group: "e.io", Version: "v1", Kind: "App"}, Health: checker}
	foo := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "Foo", "metadata": map[string]any{"name": "f"}}}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}
	plan := &Plan{Children: []Child{{Template: "foo.yaml", Object: foo}, {Template: "cm.yaml", Object: cm}},
		DependsOn: map[string][]string{"cm.yaml": {"foo.yaml"}}}

	g := NewGate(kind, plan)
	if why, waits := g.Hold(0, false, false); !waits || !strings.Contains(why, "Foo/f: its CustomResourceDefinition is not served yet") {
		t.Errorf("unserved: %q %v", why, waits)
	}
	if !g.unserved {
		t.Error("an unserved child does not make the reconcile look again")
	}
	g.Done(0, nil)
	if why, waits := g.Hold(1, false, true); !waits || !strings.Contains(why, "Foo/f: not applied yet, it waits too") {
		t.Errorf("behind an unserved child: %q %v", why, waits)
	}

	g = NewGate(kind, plan)
	if _, waits := g.Hold(0, false, true); waits {
		t.Fatal("foo.yaml waits for nothing")
	}
	g.Defer(0, "deleted, to be created anew (spec.selector changed)")
	if why, waits := g.Hold(1, false, true); !waits || !strings.Contains(why, "Foo/f: not applied yet, it waits too") {
		t.Errorf("behind a child created anew: %q %v", why, waits)
	}
	if len(g.waits) != 2 || !strings.Contains(g.waits[0].String(), "deleted, to be created anew") {
		t.Errorf("waits %v", g.waits)
	}
}
