package operator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// TestChartFilesInSync: the chart's copies are the repository's files,
// byte for byte: kinds/<folder>/ the files templates/kustomization.yaml
// delivers of each folder (deploy/examples), kind-crds/ crds/, and
// kind-rbac/rbac.yaml deploy/rbac.yaml.
func TestChartFilesInSync(t *testing.T) {
	folders := kustomizedFolders(t)
	if len(folders) == 0 {
		t.Fatal("templates/kustomization.yaml delivers no kind folder")
	}
	for _, name := range slices.Sorted(maps.Keys(folders)) {
		files := folders[name]
		fix := fmt.Sprintf("rm -rf charts/operator/kinds/%[1]s && mkdir -p charts/operator/kinds/%[1]s", name)
		for _, f := range slices.Sorted(maps.Keys(files)) {
			fix += fmt.Sprintf(" && cp templates/%s charts/operator/kinds/%s/%s", files[f], name, f)
		}
		if _, err := os.Stat(filepath.Join("kinds", name)); err != nil {
			t.Errorf("kinds/%s: %v: %s", name, err, fix)
			continue
		}
		got := readFiles(t, filepath.Join("kinds", name))
		for _, f := range slices.Sorted(maps.Keys(files)) {
			data, err := os.ReadFile(filepath.Join(repoRoot, "templates", files[f]))
			if err != nil {
				t.Fatal(err)
			}
			switch g, ok := got[f]; {
			case !ok:
				t.Errorf("kinds/%s/%s is missing: %s", name, f, fix)
			case !bytes.Equal(g, data):
				t.Errorf("kinds/%s/%s differs from templates/%s: %s", name, f, files[f], fix)
			}
		}
		for _, f := range slices.Sorted(maps.Keys(got)) {
			if _, ok := files[f]; !ok {
				t.Errorf("kinds/%s/%s: templates/kustomization.yaml does not deliver it: %s", name, f, fix)
			}
		}
	}
	for _, name := range dirNames(t, "kinds") {
		if _, ok := folders[name]; !ok {
			t.Errorf("kinds/%s: templates/kustomization.yaml delivers no such folder: rm -r charts/operator/kinds/%[1]s", name)
		}
	}
	for _, d := range sameFiles(t, filepath.Join(repoRoot, "crds"), "kind-crds") {
		t.Errorf("kind-crds/%s: cp crds/*.yaml charts/operator/kind-crds/", d)
	}
	for _, d := range sameFiles(t, filepath.Join(repoRoot, "deploy"), "kind-rbac", "rbac.yaml") {
		t.Errorf("kind-rbac/%s: cp deploy/rbac.yaml charts/operator/kind-rbac/rbac.yaml", d)
	}
}

// TestReadmeListsEveryValue: README.md has a row for every value of the
// schema (which refuses any value it does not describe).
func TestReadmeListsEveryValue(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	type node struct {
		Properties map[string]*node `json:"properties"`
	}
	var root node
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	var walk func(prefix string, n *node)
	walk = func(prefix string, n *node) {
		for _, k := range slices.Sorted(maps.Keys(n.Properties)) {
			p := n.Properties[k]
			switch {
			case prefix == "" && k == "global": // Helm's, for subcharts
			case len(p.Properties) > 0:
				walk(prefix+k+".", p)
			case !bytes.Contains(readme, []byte("| `"+prefix+k+"` |")):
				t.Errorf("README.md: no row for value %s", prefix+k)
			}
		}
	}
	walk("", &root)
}

// kustomizedFolders reads templates/kustomization.yaml's configMapGenerator:
// ConfigMap name -> key -> file under templates/.
func kustomizedFolders(t *testing.T) map[string]map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "templates", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		ConfigMapGenerator []struct {
			Name  string   `json:"name"`
			Files []string `json:"files"`
		} `json:"configMapGenerator"`
	}
	if err := sigsyaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	folders := map[string]map[string]string{}
	for _, g := range k.ConfigMapGenerator {
		files := map[string]string{}
		for _, f := range g.Files {
			key, file, ok := strings.Cut(f, "=") // kustomize's key=file
			if !ok {
				key, file = filepath.Base(f), f
			}
			files[key] = file
		}
		folders[g.Name] = files
	}
	return folders
}

// dirNames lists the directories in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// readFiles reads the regular files of dir by name.
func readFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	return files
}

// sameFiles lists how the regular files of dir b differ from those of a,
// or only those of names when given.
func sameFiles(t *testing.T, a, b string, names ...string) []string {
	t.Helper()
	fa, fb := readFiles(t, a), readFiles(t, b)
	if len(names) > 0 {
		maps.DeleteFunc(fa, func(name string, _ []byte) bool { return !slices.Contains(names, name) })
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(fa)) {
		switch data, ok := fb[name]; {
		case !ok:
			out = append(out, name+" is missing")
		case !bytes.Equal(data, fa[name]):
			out = append(out, name+" differs")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fb)) {
		if _, ok := fa[name]; !ok {
			out = append(out, name+" is not in "+strings.TrimPrefix(a, repoRoot+"/"))
		}
	}
	return out
}
