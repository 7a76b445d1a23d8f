package render

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/internal/testsupport/fakelookup"
	"github.com/tmplop/operator/internal/testsupport/golden"
)

// fixedNow is Input.Now of every golden case, so durationUntil and now are
// deterministic.
var fixedNow = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Fixture files of a golden case; everything else in the folder is the
// template folder under test.
const (
	objectFixture   = "object.yaml"   // the custom resource
	childrenFixture = "children.yaml" // optional: list of live children, for status.yaml
	clusterFixture  = "cluster.yaml"  // optional: list of objects the fake Lookup serves
	goldenFile      = "golden.yaml"   // expected output
)

// TestGolden renders every testdata/<case>/ folder and compares the result
// with its golden.yaml. Run `go test ./engine/render -run TestGolden -update`
// to rewrite the golden files after an intended change, and review the diff.
func TestGolden(t *testing.T) {
	cases, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if !c.IsDir() || c.Name() == "fuzz" { // fuzz: the fuzz targets' seed corpora
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			dir := filepath.Join("testdata", c.Name())
			set, err := parseFolder(t, templateFS(t, dir))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			in := Input{Object: readObject(t, filepath.Join(dir, objectFixture)), Now: fixedNow}
			in.Children = childrenByKind(readList(t, filepath.Join(dir, childrenFixture)))
			if objs := readList(t, filepath.Join(dir, clusterFixture)); objs != nil {
				in.Lookup = &fakelookup.Objects{Items: objs}
			}

			golden.Check(t, filepath.Join(dir, goldenFile), renderGolden(t, set, in))
		})
	}
}

// renderGolden renders children then status and formats them as documents
// marked with their source, the way `helm template` prints a release.
func renderGolden(t *testing.T, set *Set, in Input) []byte {
	t.Helper()
	children, err := set.Children(t.Context(), in)
	if err != nil {
		t.Fatalf("children: %v", err)
	}
	status, err := set.Status(t.Context(), in)
	if err != nil {
		t.Fatalf("status: %v", err)
	}

	var docs []golden.Doc
	for _, m := range children.Manifests {
		docs = append(docs, golden.Doc{Header: "Source: " + m.Template, Value: m.Object.Object})
	}
	if set.HasStatus() {
		docs = append(docs, golden.Doc{Header: "Status: " + statusFile, Value: status.Status})
	}
	if children.RequeueAfter != 0 || status.RequeueAfter != 0 {
		docs = append(docs, golden.Doc{Header: fmt.Sprintf("RequeueAfter: children %v, status %v", children.RequeueAfter, status.RequeueAfter)})
	}
	return golden.YAML(t, docs...)
}

// templateFS loads a case folder, sub-folders included, without its
// fixtures, so that parseFolder sees exactly a template folder (fixtures are
// *.yaml and would be children).
func templateFS(t testing.TB, dir string) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		switch rel {
		case objectFixture, childrenFixture, clusterFixture, goldenFile:
			return nil
		}
		data, err := os.ReadFile(path)
		fsys[filepath.ToSlash(rel)] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

// decodeLikeAPI decodes YAML into unstructured content with int64 numbers,
// as objects arrive from the API server.
func decodeLikeAPI(t testing.TB, data []byte, v any) {
	t.Helper()
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := utiljson.Unmarshal(j, v); err != nil {
		t.Fatal(err)
	}
}

func readObject(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	decodeLikeAPI(t, data, &obj)
	return obj
}

// readList reads a YAML list of objects; nil when the file does not exist.
func readList(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	decodeLikeAPI(t, data, &objs)
	return objs
}

// childrenByKind indexes live children as Input.Children expects them.
func childrenByKind(objs []map[string]any) map[string]map[string]any {
	if objs == nil {
		return nil
	}
	byKind := map[string]map[string]any{}
	for _, obj := range objs {
		kind, _ := obj["kind"].(string)
		name, _ := obj["metadata"].(map[string]any)["name"].(string)
		if byKind[kind] == nil {
			byKind[kind] = map[string]any{}
		}
		byKind[kind][name] = obj
	}
	return byKind
}
