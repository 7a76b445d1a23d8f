package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

// writeFiles writes files (path -> content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var smallChart = map[string]string{
	"helm-charts/web/Chart.yaml":          "apiVersion: v2\nname: web\nversion: 1.2.3\n",
	"helm-charts/web/values.yaml":         "image:\n  repository: nginx\n  tag: \"1.0\"\nreplicas: 1\n",
	"helm-charts/web/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  image: {{ .Values.image.repository }}:{{ .Values.image.tag }}\n  replicas: {{ .Values.replicas | quote }}\n",
	"helm-charts/web/templates/NOTES.txt": "Installed {{ .Release.Name }}.\n",
}

func TestWatchesYAML(t *testing.T) {
	t.Setenv("WEB_IMAGE", "registry.example.com/nginx")
	root := t.TempDir()
	writeFiles(t, root, smallChart)
	writeFiles(t, root, map[string]string{WatchesFile: `
- group: charts.example.com
  version: v1alpha1
  kind: Web
  chart: helm-charts/web
  maxConcurrentReconciles: 3
  watchDependentResources: true
  reconcilePeriod: 1m
  selector:
    matchLabels: {tier: front}
  overrideValues:
    image.repository: $WEB_IMAGE
  lookups:
  - apiVersion: v1
    kind: Secret
`})
	kinds, skipped, err := Load(root)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("Load: %v %v", err, skipped)
	}
	if len(kinds) != 1 {
		t.Fatalf("kinds = %d, want 1", len(kinds))
	}
	k := kinds[0]
	if k.FormatName() != "chart" || k.GVK.String() != "charts.example.com/v1alpha1, Kind=Web" || k.Workers() != 3 ||
		k.ObjectSelector() != "tier=front" || len(k.Spec.Lookups) != 1 || k.Dir != filepath.Join(root, "helm-charts/web") {
		t.Fatalf("kind = %+v", k)
	}
	obj := map[string]any{"apiVersion": "charts.example.com/v1alpha1", "kind": "Web",
		"metadata": map[string]any{"name": "shop", "namespace": "ns", "generation": int64(2)},
		"spec":     map[string]any{"replicas": int64(4), "image": map[string]any{"repository": "mine", "tag": "2.0"}}}
	res, err := k.Children(t.Context(), render.Input{Object: obj}, chart.Cluster{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifests) != 1 {
		t.Fatalf("manifests = %d, want 1 (NOTES.txt renders nothing)", len(res.Manifests))
	}
	data := res.Manifests[0].Object.Object["data"].(map[string]any)
	// overrideValues over the spec, the spec over values.yaml.
	if data["image"] != "registry.example.com/nginx:2.0" || data["replicas"] != "4" {
		t.Fatalf("data = %v", data)
	}
	st, err := k.Status(t.Context(), render.Input{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	if c := st.Status["chart"].(map[string]any); c["name"] != "web" || c["version"] != "1.2.3" {
		t.Fatalf("status = %v", st.Status)
	}
}

func TestWatchesYAMLErrors(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{name: "no chart", files: map[string]string{WatchesFile: "- {group: a.io, version: v1, kind: A}\n"},
			wantErr: "version, kind and chart are required"},
		{name: "not a chart", files: map[string]string{WatchesFile: "- {group: a.io, version: v1, kind: A, chart: nowhere}\n"},
			wantErr: "not a chart"},
		{name: "a kind.yaml as well", files: map[string]string{
			WatchesFile:                   "- {group: a.io, version: v1, kind: A, chart: helm-charts/web}\n",
			"helm-charts/web/" + KindFile: "apiVersion: a.io/v1\nkind: A\n"},
			wantErr: "keep one"},
		{name: "not a list", files: map[string]string{WatchesFile: "group: a.io\n"}, wantErr: WatchesFile},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, smallChart)
			writeFiles(t, root, tc.files)
			kinds, skipped, err := Load(root)
			if err != nil {
				t.Fatal(err)
			}
			if len(kinds) != 0 || len(skipped) != 1 || !strings.Contains(skipped[0].Error(), tc.wantErr) {
				t.Fatalf("kinds %d, skipped %v, want one error with %q", len(kinds), skipped, tc.wantErr)
			}
		})
	}
}

// TestChartArchive: a ConfigMap folder holds a chart packaged, beside its
// kind.yaml: it loads and renders as the chart's folder does.
func TestChartArchive(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, smallChart)
	ch, err := loader.LoadDir(filepath.Join(root, "helm-charts/web"))
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	files := layout.FromMap(map[string][]byte{KindFile: []byte("apiVersion: charts.example.com/v1\nkind: Web\n"), filepath.Base(tgz): data})
	k, err := Compile("web", "configmap/ns/web", files)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"metadata": map[string]any{"name": "shop", "namespace": "ns"}, "spec": map[string]any{"replicas": int64(2)}}
	res, err := k.Children(t.Context(), render.Input{Object: obj}, chart.Cluster{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifests) != 1 || res.Manifests[0].Object.Object["data"].(map[string]any)["replicas"] != "2" {
		t.Fatalf("manifests = %v", res.Manifests)
	}
	files["other-0.1.0.tgz"] = data
	if _, err := Compile("web", "configmap/ns/web", files); err == nil || !strings.Contains(err.Error(), "one packaged chart") {
		t.Fatalf("two archives: err = %v", err)
	}
}

// TestChartFolderRefusals: what a chart folder may not hold, refused at
// load with the reason.
func TestChartFolderRefusals(t *testing.T) {
	base := map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
		KindFile:            "apiVersion: charts.example.com/v1\nkind: Web\n",
	}
	cases := []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{name: "dependsOn", files: map[string]string{KindFile: "apiVersion: charts.example.com/v1\nkind: Web\ndependsOn:\n  web/templates/cm.yaml: [web/templates/cm.yaml]\n"},
			wantErr: "orders its children with Helm's hooks"},
		{name: "status.yaml", files: map[string]string{"status.yaml": "x: 1\n"}, wantErr: "remove status.yaml"},
		{name: "library chart", files: map[string]string{"Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\ntype: library\n"},
			wantErr: "a library chart renders nothing"},
		{name: "dependency not built", files: map[string]string{"Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\ndependencies:\n- name: db\n  version: 1.x\n  repository: https://charts.example.com\n"},
			wantErr: "dependencies not in charts/: db"},
		{name: "overrideValues without a chart", files: map[string]string{"Chart.yaml": "", KindFile: "apiVersion: charts.example.com/v1\nkind: Web\noverrideValues: {a: 1}\n"},
			wantErr: "only a Helm chart has values"},
		{name: "adoptHelmReleases without a chart", files: map[string]string{"Chart.yaml": "", KindFile: "apiVersion: charts.example.com/v1\nkind: Web\nadoptHelmReleases: true\n"},
			wantErr: "only a Helm chart has releases"},
		{name: "a built-in kind", files: map[string]string{KindFile: "apiVersion: v1\nkind: ConfigMap\n"},
			wantErr: "the status of built-in kind ConfigMap is not the operator's to write: serve the chart as a custom kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := layout.Files{}
			for k, v := range base {
				files[k] = []byte(v)
			}
			for k, v := range tc.files {
				if v == "" {
					delete(files, k)
					continue
				}
				files[k] = []byte(v)
			}
			if _, err := Compile("web", "web", files); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one with %q", err, tc.wantErr)
			}
		})
	}
}
