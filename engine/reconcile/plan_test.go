package reconcile

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
)

func kind(t *testing.T, allow bool, files map[string]string) *catalog.Kind {
	t.Helper()
	set, err := render.Parse(files)
	if err != nil {
		t.Fatal(err)
	}
	return &catalog.Kind{Name: "k", GVK: schema.GroupVersionKind{Group: "e.io", Version: "v1", Kind: "K"},
		Spec: catalog.Spec{AllowClusterScoped: allow}, Templates: set}
}

func TestMakePlan(t *testing.T) {
	parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "K",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "u1"}, "spec": map[string]any{}}}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n"
	cr := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Name }}\n"
	cases := []struct {
		name      string
		allow     bool
		files     map[string]string
		wantErr   string
		wantPlan  bool
		wantCount int
	}{
		{name: "namespaced child adopted", files: map[string]string{"cm.yaml": cm}, wantCount: 1},
		{name: "cluster-scoped refused", files: map[string]string{"cm.yaml": cm, "cr.yaml": cr}, wantErr: "cr.yaml: ClusterRole \"p\" is cluster-scoped", wantPlan: true},
		{name: "cluster-scoped allowed", allow: true, files: map[string]string{"cm.yaml": cm, "cr.yaml": cr}, wantCount: 2},
		{name: "same child twice", files: map[string]string{"a.yaml": cm, "b.yaml": cm}, wantErr: "also rendered by a.yaml", wantPlan: true},
		{name: "render error", files: map[string]string{"a.yaml": "{{ required \"spec.size is required\" .Spec.size }}"}, wantErr: "a.yaml:1: spec.size is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := MakePlan(t.Context(), kind(t, tc.allow, tc.files), parent.DeepCopy(), render.Input{}, catalog.Cluster{}, kube.OfflineNamespaced, ownership.Policy{Manager: "op"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || IsPlanError(err) != tc.wantPlan {
					t.Fatalf("err = %v, want %q (plan error %v)", err, tc.wantErr, tc.wantPlan)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Children) != tc.wantCount {
				t.Fatalf("children = %d, want %d", len(plan.Children), tc.wantCount)
			}
			for _, c := range plan.Children {
				if !ownership.IsChildOf(c.Object, parent, "op") {
					t.Errorf("%s not labeled as a child", c.Object.GetName())
				}
				if c.NeedsFinalizer != (c.Object.GetKind() == "ClusterRole") {
					t.Errorf("%s needs finalizer = %v", c.Object.GetKind(), c.NeedsFinalizer)
				}
			}
		})
	}
}

func TestSoonest(t *testing.T) {
	for _, tc := range []struct{ a, b, want int }{{0, 0, 0}, {0, 5, 5}, {5, 0, 5}, {3, 5, 3}, {5, 3, 3}} {
		if got := Soonest(durationOf(tc.a), durationOf(tc.b)); got != durationOf(tc.want) {
			t.Errorf("Soonest(%d, %d) = %v", tc.a, tc.b, got)
		}
	}
}

func durationOf(s int) time.Duration { return time.Duration(s) * time.Second }

// A parent holds the finalizer for a child outside its reach and for a
// chart's hooks of either deletion phase, else not.
func TestPlanNeedsFinalizer(t *testing.T) {
	for name, tc := range map[string]struct {
		plan Plan
		want bool
	}{
		"nothing":                      {Plan{Children: []Child{{}}}, false},
		"a child that needs it":        {Plan{Children: []Child{{}, {NeedsFinalizer: true}}}, true},
		"pre-delete hooks":             {Plan{OnDelete: map[string][]Child{"pre-delete": {{}}}}, true},
		"post-delete hooks only":       {Plan{OnDelete: map[string][]Child{"pre-delete": nil, "post-delete": {{}}}}, true},
		"hooks of both, a plain child": {Plan{Children: []Child{{}}, OnDelete: map[string][]Child{"pre-delete": {{}}, "post-delete": {{}}}}, true},
		"delete steps without hooks":   {Plan{Children: []Child{{}}, OnDelete: map[string][]Child{"pre-delete": nil, "post-delete": {}}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.plan.NeedsFinalizer(); got != tc.want {
				t.Errorf("NeedsFinalizer() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMakePlanKept: a chart's child with helm.sh/resource-policy: keep gets
// no owner reference (the garbage collector would delete it with the
// parent) and no need of the finalizer (which only deletes); its other
// children, and a folder of templates whatever its annotations, get the
// parent's controller reference. Either way the child carries the parent's
// labels, so that a new parent of the same name takes it back.
func TestMakePlanKept(t *testing.T) {
	parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "K",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "u1"}, "spec": map[string]any{}}}
	kept := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-db\n  annotations:\n    helm.sh/resource-policy: %s\n"
	plain := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\n"
	chartKind := func(t *testing.T, policy string) *catalog.Kind {
		k, err := catalog.LoadKindFS("c", "test", fstest.MapFS{
			"Chart.yaml":          {Data: []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n")},
			"kind.yaml":           {Data: []byte("apiVersion: e.io/v1\nkind: K\n")},
			"templates/db.yaml":   {Data: []byte(fmt.Sprintf(kept, policy))},
			"templates/conf.yaml": {Data: []byte(plain)},
		})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	templatesKind := func(t *testing.T, policy string) *catalog.Kind {
		return kind(t, false, map[string]string{"db.yaml": strings.ReplaceAll(fmt.Sprintf(kept, policy), ".Release.Name", ".Name"),
			"conf.yaml": strings.ReplaceAll(plain, ".Release.Name", ".Name")})
	}
	for name, tc := range map[string]struct {
		kind     func(*testing.T, string) *catalog.Kind
		policy   string
		wantKept bool
	}{
		"chart, keep":                  {kind: chartKind, policy: "keep", wantKept: true},
		"chart, keep as helm reads it": {kind: chartKind, policy: `" KEEP "`, wantKept: true},
		"chart, another policy":        {kind: chartKind, policy: "delete"},
		"folder of templates, keep":    {kind: templatesKind, policy: "keep"},
	} {
		t.Run(name, func(t *testing.T) {
			plan, err := MakePlan(t.Context(), tc.kind(t, tc.policy), parent.DeepCopy(), render.Input{}, catalog.Cluster{}, kube.OfflineNamespaced, ownership.Policy{Manager: "op"})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Children) != 2 {
				t.Fatalf("children = %d, want 2", len(plan.Children))
			}
			for _, c := range plan.Children {
				wantOwned := c.Object.GetKind() == "ConfigMap" || !tc.wantKept
				refs := c.Object.GetOwnerReferences()
				if owned := len(refs) == 1 && refs[0].UID == "u1"; owned != wantOwned || !owned && len(refs) > 0 {
					t.Errorf("%s: owner references %v, want the parent's controller reference: %v", c.Object.GetKind(), refs, wantOwned)
				}
				if c.NeedsFinalizer {
					t.Errorf("%s needs the finalizer", c.Object.GetKind())
				}
				if !ownership.IsChildOf(c.Object, parent, "op") {
					t.Errorf("%s not labelled as the parent's child", c.Object.GetKind())
				}
			}
		})
	}
}
