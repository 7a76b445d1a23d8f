package catalog

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tmplop/operator/engine/catalog/childkinds"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/render"
)

// TestStaticChildrenShipped: the kinds of the repository's folders, and
// nothing unknown.
func TestStaticChildrenShipped(t *testing.T) {
	want := map[string]string{
		"appservice":  "apps/v1 Deployment, v1 Service",
		"at":          "v1 Pod",
		"helloworld":  "apps/v1 Deployment",
		"memcached":   "apps/v1 Deployment",
		"mydaemonset": "v1 Pod",
	}
	for folder, kinds := range want {
		k := loadKind(t, "../../templates/"+folder)
		children, unknown, err := childkinds.Read(k.Templates, k.NeverApplied())
		if err != nil || len(unknown) > 0 {
			t.Fatalf("%s: %v %v", folder, unknown, err)
		}
		var got []string
		for _, c := range children {
			got = append(got, c.APIVersion+" "+c.Kind)
		}
		if strings.Join(got, ", ") != kinds {
			t.Errorf("%s: got %q, want %q", folder, got, kinds)
		}
	}
}

func loadKind(t *testing.T, dir string) *Kind {
	t.Helper()
	k, err := LoadKind(dir)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestStaticCoversChartRender: for charts, the kinds found statically
// cover every manifest the engine applies (at install and upgrade, and at
// the deletion), while the kinds of the hooks never applied are left out.
func TestStaticCoversChartRender(t *testing.T) {
	cases := []struct {
		dir   string
		spec  map[string]any
		never []string // kinds only the charts' test or rollback hooks render
	}{
		{dir: "../../templates/webapp", spec: map[string]any{"migration": map[string]any{"enabled": true}}},
		{dir: "../rbac/testdata/folders/chart", never: []string{"v1 Pod", "v1 Secret"}},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			k := loadKind(t, tc.dir)
			if k.FormatName() != "chart" {
				t.Fatalf("%s is not a chart", tc.dir)
			}
			children, err := k.ChildKinds()
			if err != nil {
				t.Fatal(err)
			}
			static := map[string]bool{}
			for _, c := range children {
				static[c.APIVersion+" "+c.Kind] = true
			}
			obj := map[string]any{"apiVersion": k.GVK.GroupVersion().String(), "kind": k.GVK.Kind,
				"metadata": map[string]any{"name": "a", "namespace": "ns", "generation": int64(1)},
				"spec":     tc.spec}
			res, err := k.Children(t.Context(), render.Input{Object: obj}, chart.Cluster{})
			if err != nil {
				t.Fatal(err)
			}
			all := slices.Clone(res.Manifests)
			for _, hooks := range res.OnDelete {
				all = append(all, hooks...)
			}
			if len(all) == 0 {
				t.Fatal("the chart rendered nothing to apply")
			}
			for _, m := range all {
				if gvk := m.Object.GroupVersionKind(); !static[gvk.GroupVersion().String()+" "+gvk.Kind] {
					t.Errorf("%s renders %s, which the static analysis missed (found %v)", m.Template, gvk, children)
				}
			}
			for _, kind := range tc.never {
				if static[kind] {
					t.Errorf("%s, which only a hook never applied renders, is among the kinds (%v)", kind, children)
				}
			}
		})
	}
}
