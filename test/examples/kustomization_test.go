package examples_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/chart"
)

// TestKustomizationListsEveryFile: templates/kustomization.yaml delivers
// each shipped folder as a ConfigMap; a file left out of it would be
// missing in-cluster while present in every local test.
func TestKustomizationListsEveryFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(templatesDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		ConfigMapGenerator []struct {
			Name  string   `json:"name"`
			Files []string `json:"files"`
		} `json:"configMapGenerator"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	listed := map[string][]string{}
	for _, g := range k.ConfigMapGenerator {
		listed[g.Name] = slices.Sorted(slices.Values(g.Files))
	}
	entries, err := os.ReadDir(templatesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if dir := filepath.Join(templatesDir, e.Name()); chart.IsChart(os.DirFS(dir)) {
			// Its sub-folders cannot be ConfigMap keys: its kind.yaml and
			// the chart packaged (TestPackagedCharts).
			want := slices.Sorted(slices.Values([]string{e.Name() + "/" + catalog.KindFile, packageName(t, dir)}))
			if got := listed[e.Name()]; !slices.Equal(got, want) {
				t.Errorf("templates/kustomization.yaml: ConfigMap %s lists %v, want %v", e.Name(), got, want)
			}
			delete(listed, e.Name())
			continue
		}
		files, err := os.ReadDir(filepath.Join(templatesDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, f := range files {
			want = append(want, e.Name()+"/"+f.Name())
		}
		slices.Sort(want)
		got, ok := listed[e.Name()]
		if !ok {
			t.Errorf("templates/kustomization.yaml has no ConfigMap for folder %s", e.Name())
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("templates/kustomization.yaml: ConfigMap %s lists %v, the folder holds %v", e.Name(), got, want)
		}
		delete(listed, e.Name())
	}
	for name := range listed {
		t.Errorf("templates/kustomization.yaml: ConfigMap %s has no folder", name)
	}
}
