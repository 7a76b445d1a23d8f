package crd_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/crd"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/internal/testsupport/golden"
)

// regenerate is the command that makes crds/, from the repository's root.
const regenerate = "go run ./cmd/operator crd --templates templates --out crds"

// TestExamplesUpToDate regenerates the CRDs of the repository's examples and
// fails when crds/ differs: kind.yaml is the source of truth, crds/ its
// output.
func TestExamplesUpToDate(t *testing.T) {
	t.Chdir("../..")
	files, warnings, err := crd.Files("templates")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		t.Errorf("every example has its CRD in its kind.yaml: %s", w)
	}
	if len(files) == 0 {
		t.Fatal("no CRD generated from templates/")
	}
	for _, f := range files {
		path := filepath.Join("crds", f.Folder+".yaml")
		have, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v: regenerate crds/ with\n\t%s", err, regenerate)
			continue
		}
		if !bytes.Equal(have, f.Data) {
			t.Errorf("%s is not what %s generates (- file, + generated):\n%s\nregenerate crds/ with\n\t%s",
				path, f.Source, golden.Diff(string(have), string(f.Data)), regenerate)
		}
	}
}

// TestGolden generates the CRDs of testdata/folders and compares them with
// testdata/golden (go test -update rewrites them).
func TestGolden(t *testing.T) {
	files, warnings, err := crd.Files("testdata/folders")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if len(files) != 5 {
		t.Fatalf("got %d files, want 5", len(files))
	}
	for _, f := range files {
		t.Run(f.Folder, func(t *testing.T) {
			golden.Check(t, filepath.Join("testdata", "golden", f.Folder+".yaml"), f.Data)
		})
	}
}

// load loads a kind folder made of files.
func load(t *testing.T, files map[string]string) (*catalog.Kind, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return catalog.LoadKindFS("test", "test", fsys)
}

const kindHeader = "apiVersion: things.example.com/v1\nkind: Thing\n"

func TestForKind(t *testing.T) {
	k, err := load(t, map[string]string{"kind.yaml": kindHeader + "spec:\n  size: integer | default=2\n"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := crd.ForKind(k)
	if err != nil {
		t.Fatal(err)
	}
	v := c.Spec.Versions[0]
	root := v.Schema.OpenAPIV3Schema
	switch {
	case c.Name != "things.things.example.com" || c.Spec.Names.Plural != "things" || c.Spec.Names.ListKind != "ThingList" || c.Spec.Names.Singular != "thing":
		t.Errorf("names: %s %+v", c.Name, c.Spec.Names)
	case c.Spec.Scope != apiextensionsv1.NamespaceScoped:
		t.Errorf("scope %s", c.Spec.Scope)
	case v.Name != "v1" || !v.Served || !v.Storage || v.Subresources == nil || v.Subresources.Status == nil:
		t.Errorf("version %+v", v)
	case string(root.Properties["spec"].Properties["size"].Default.Raw) != "2":
		t.Errorf("spec: %+v", root.Properties["spec"])
	case root.Properties["status"].Properties["conditions"].XListType == nil || root.Properties["status"].Properties["observedGeneration"].Type != "integer":
		t.Errorf("status: %+v", root.Properties["status"])
	}
	var names []string
	for _, col := range v.AdditionalPrinterColumns {
		names = append(names, col.Name)
	}
	if got := strings.Join(names, ","); got != "Ready,Reason,Age" {
		t.Errorf("columns %s, want Ready,Reason,Age", got)
	}
	if crd.SourceFile(k) != "kind.yaml" {
		t.Errorf("SourceFile = %s", crd.SourceFile(k))
	}
}

func TestForKindErrors(t *testing.T) {
	crdFile := func(group, kind, plural, version string, extra string) string {
		return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %s.%s}
spec:
  group: %s
  names: {kind: %s, plural: %s}
  scope: Namespaced
  versions: [{name: %s, served: true, storage: true}]
%s`, plural, group, group, kind, plural, version, extra)
	}
	cases := []struct {
		name  string
		files map[string]string
		// loadErr: the folder does not load; err: ForKind fails.
		loadErr, err string
		noSchema     bool
	}{
		{name: "no schema", files: map[string]string{"kind.yaml": kindHeader}, noSchema: true},
		{name: "built-in kind", files: map[string]string{"kind.yaml": "apiVersion: v1\nkind: ConfigMap\n"}, noSchema: true},
		{name: "schema of a built-in kind", files: map[string]string{"kind.yaml": "apiVersion: apps/v1\nkind: Deployment\nspec: {a: string}\n"},
			loadErr: "kind.yaml:2: spec, status, printerColumns, validation, versions: Deployment is a built-in kind"},
		{name: "bad scope", files: map[string]string{"kind.yaml": kindHeader + "scope: Global\n"}, loadErr: `kind.yaml:3: scope "Global": want Namespaced or Cluster`},
		{name: "bad plural", files: map[string]string{"kind.yaml": kindHeader + "plural: Things\n"}, loadErr: `kind.yaml:3: plural "Things"`},
		{name: "schema error at load", files: map[string]string{"kind.yaml": kindHeader + "spec:\n  ports:\n    - port: integer | minimun=1\n"},
			loadErr: `kind.yaml:5: spec.ports[].port: unknown marker "minimun" (did you mean "minimum"?)`},
		{name: "status error at load", files: map[string]string{"kind.yaml": kindHeader + "status:\n  conditions: '[]object'\n"},
			loadErr: "kind.yaml:4: status.conditions: written by the engine"},
		{name: "kind.yaml and crd.yaml", files: map[string]string{"kind.yaml": kindHeader + "spec: {a: string}\n", "crd.yaml": crdFile("things.example.com", "Thing", "things", "v1", "")},
			loadErr: "kind.yaml:3: the folder has a crd.yaml"},
		{name: "group without a dot", files: map[string]string{"kind.yaml": "apiVersion: things/v1\nkind: Thing\nspec: {a: string}\n"},
			err: "kind.yaml:1: apiVersion things/v1: a custom resource's group needs a dot"},
		{name: "column on a missing field", files: map[string]string{"kind.yaml": kindHeader + "spec: {size: integer}\nprinterColumns: [{name: Size, type: integer, jsonPath: .spec.sise}]\n"},
			err: "kind.yaml:4: printerColumns[0] (Size): jsonPath .spec.sise: sise is not a field of the schema"},
		{name: "integer column on a string", files: map[string]string{"kind.yaml": kindHeader + "spec: {size: string}\nprinterColumns: [{name: Size, type: integer, jsonPath: .spec.size}]\n"},
			err: "kind.yaml:4: printerColumns[0] (Size): a integer column on a field of type string"},
		{name: "column type", files: map[string]string{"kind.yaml": kindHeader + "printerColumns: [{name: Size, type: int, jsonPath: .spec.size}]\n"},
			err: `kind.yaml:3: printerColumns[0] (Size): type "int"`},
		{name: "column twice", files: map[string]string{"kind.yaml": kindHeader + "printerColumns: [{name: A, type: string, jsonPath: .spec.a}, {name: a, type: string, jsonPath: .spec.b}]\n"},
			err: "kind.yaml:3: printerColumns[1]: column a is given twice"},
		{name: "rule reason", files: map[string]string{"kind.yaml": kindHeader + "validation: [{rule: 'true', reason: Bad}]\n"},
			err: `kind.yaml:3: validation[0]: reason "Bad"`},
		{name: "rule fieldPath", files: map[string]string{"kind.yaml": kindHeader + "spec: {a: string}\nvalidation: [{rule: 'true', fieldPath: .spec.b}]\n"},
			err: "kind.yaml:4: validation[0]: fieldPath .spec.b: b is not a field of the schema"},
		{name: "empty rule", files: map[string]string{"kind.yaml": kindHeader + "validation: [{rule: ' '}]\n"}, err: "kind.yaml:3: validation[0]: rule is empty"},
		{name: "crd.yaml of another group", files: map[string]string{"kind.yaml": kindHeader, "crd.yaml": crdFile("other.example.com", "Thing", "things", "v1", "")},
			err: "crd.yaml:5: serves other.example.com Thing, kind.yaml names things.example.com Thing"},
		{name: "crd.yaml without the version", files: map[string]string{"kind.yaml": kindHeader, "crd.yaml": crdFile("things.example.com", "Thing", "things", "v2", "")},
			err: "crd.yaml:8: no version v1, which kind.yaml names"},
		{name: "crd.yaml with an unknown field", files: map[string]string{"kind.yaml": kindHeader, "crd.yaml": crdFile("things.example.com", "Thing", "things", "v1", "  bogus: 1\n")},
			err: `crd.yaml:9: error unmarshaling JSON: while decoding JSON: json: unknown field "bogus"`},
		{name: "crd.yaml with two documents", files: map[string]string{"kind.yaml": kindHeader, "crd.yaml": crdFile("things.example.com", "Thing", "things", "v1", "---\na: 1\n")},
			err: "crd.yaml: more than one YAML document"},
		{name: "crd.yaml not a CRD", files: map[string]string{"kind.yaml": kindHeader, "crd.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"},
			err: "crd.yaml:2: a v1 ConfigMap, want an apiextensions.k8s.io/v1 CustomResourceDefinition"},
		{name: "crd.yaml plural against kind.yaml", files: map[string]string{"kind.yaml": kindHeader + "plural: thingies\n", "crd.yaml": crdFile("things.example.com", "Thing", "things", "v1", "")},
			err: "crd.yaml:6: plural things, kind.yaml says thingies"},
		{name: "crd.yaml name", files: map[string]string{"kind.yaml": kindHeader, "crd.yaml": strings.Replace(crdFile("things.example.com", "Thing", "things", "v1", ""), "name: things.", "name: stuff.", 1)},
			err: `crd.yaml:3: metadata.name "stuff.things.example.com", want things.things.example.com`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := load(t, tc.files)
			if tc.loadErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.loadErr) {
					t.Fatalf("load error = %v, want prefix %q", err, tc.loadErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = crd.ForKind(k)
			switch {
			case tc.noSchema:
				if !errors.Is(err, crd.ErrNoSchema) {
					t.Errorf("error = %v, want ErrNoSchema", err)
				}
			case err == nil || !strings.HasPrefix(err.Error(), tc.err):
				t.Errorf("error = %v, want prefix %q", err, tc.err)
			case errors.Is(err, crd.ErrNoSchema):
				t.Errorf("error %v is ErrNoSchema", err)
			default:
				// Located where it was made: lint and the Events read the
				// file, the line and the code, never the text.
				if re, ok := errors.AsType[*render.Error](err); !ok || re.Code != render.CodeInput || re.Template+":" != tc.err[:strings.IndexByte(tc.err, ':')+1] {
					t.Errorf("error %v: want a *render.Error about its file with code %s, got %#v", err, render.CodeInput, re)
				}
			}
		})
	}
}

func TestPluralize(t *testing.T) {
	for in, want := range map[string]string{
		"memcached": "memcacheds", "at": "ats", "policy": "policies", "gateway": "gateways", "status": "statuses",
		"box": "boxes", "quiz": "quizes", "batch": "batches", "mesh": "meshes", "key": "keys", "y": "ys", "": "",
		"helloworld": "helloworlds", "mydaemonset": "mydaemonsets",
	} {
		if got := crd.Pluralize(in); got != want {
			t.Errorf("Pluralize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFiles(t *testing.T) {
	root := t.TempDir()
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/kind.yaml", kindHeader+"spec: {a: string}\n")
	write("b/kind.yaml", "apiVersion: v1\nkind: ConfigMap\n")

	files, warnings, err := crd.Files(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Folder != "a" || !bytes.HasPrefix(files[0].Data, []byte("# Generated by operator crd from "+filepath.ToSlash(root)+"/a/kind.yaml. Do not edit.\n")) {
		t.Errorf("files = %+v", files)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "/b: kind ConfigMap: no CRD") {
		t.Errorf("warnings = %q", warnings)
	}

	// One folder.
	if files, _, err := crd.Files(filepath.Join(root, "a")); err != nil || len(files) != 1 {
		t.Errorf("one folder: %v, %d files", err, len(files))
	}

	// A broken folder fails the whole run, naming its file and field.
	write("c/kind.yaml", kindHeader+"spec: {a: strin}\n")
	if _, _, err := crd.Files(root); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "c", "kind.yaml")+`:3: spec.a: unknown type "strin"`) {
		t.Errorf("broken folder: %v", err)
	}
	if _, _, err := crd.Files(filepath.Join(root, "none")); err == nil {
		t.Error("no error for a missing directory")
	}
}
