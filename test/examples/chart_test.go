package examples_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/internal/testsupport/golden"
)

// TestPackagedCharts: each chart folder of templates/ is delivered to a
// running operator as a ConfigMap of its kind.yaml and the chart packaged
// (templates/<name>-<version>.tgz, as helm package names it): the package
// must be the folder's files, packed by chart.Pack. Run with -update to
// pack it again after a change of the folder.
func TestPackagedCharts(t *testing.T) {
	entries, err := os.ReadDir(templatesDir)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, e := range entries {
		dir := filepath.Join(templatesDir, e.Name())
		if !e.IsDir() || !chart.IsChart(os.DirFS(dir)) {
			continue
		}
		found++
		t.Run(e.Name(), func(t *testing.T) {
			golden.Check(t, filepath.Join(templatesDir, packageName(t, dir)), pack(t, dir))
		})
	}
	if found == 0 {
		t.Fatal("no chart folder in templates/")
	}
}

// packageName is helm package's file name of the chart in dir.
func packageName(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, chart.File))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Name, Version string }
	if err := yaml.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s-%s.tgz", meta.Name, meta.Version)
}

// pack is the chart in dir packaged, without the kind folder's own files
// (kind.yaml, crd.yaml), which the ConfigMap carries beside it.
func pack(t *testing.T, dir string) []byte {
	t.Helper()
	files, err := chart.Read(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	delete(files, catalog.KindFile)
	delete(files, catalog.CRDFile)
	data, err := chart.Pack(filepath.Base(dir), files)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
