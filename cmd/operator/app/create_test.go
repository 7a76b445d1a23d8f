package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmplop/operator/engine/scaffold"
)

func runCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := NewRootCommand(&out, &out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestCreateKind scaffolds both scopes into a temporary directory with the
// default directories, then renders each sample offline as run would apply
// it: the scaffold runs as it is.
func TestCreateKind(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		kind, scope string
		args        []string
		wantNS      string
	}{
		{"WebApp", "namespaced", nil, "namespace: default"},
		{"Site", "cluster-scoped", []string{"--namespaced=false"}, "namespace: default"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			folder := strings.ToLower(tc.kind)
			out, err := runCommand(t, append([]string{"create", "kind", "--group", "demo.example.com", "--version", "v1alpha1", "--kind", tc.kind}, tc.args...)...)
			if err != nil {
				t.Fatalf("create kind: %v\n%s", err, out)
			}
			for _, s := range []string{
				"Created kind " + tc.kind + " (demo.example.com/v1alpha1, " + tc.scope + ", resource " + folder + "s)",
				"  templates/" + folder + "/kind.yaml\n", "  templates/" + folder + "/deployment.yaml\n",
				"  templates/" + folder + "/status.yaml\n", "  crds/" + folder + ".yaml\n", "  examples/" + folder + ".yaml\n",
				"operator lint --templates templates", "operator crd --templates templates --out crds",
				"operator run --templates templates --install-crds", "kubectl apply -f examples/" + folder + ".yaml",
				"kubectl get " + folder + "s",
			} {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			want, err := scaffold.Files(scaffold.Options{Group: "demo.example.com", Version: "v1alpha1", Kind: tc.kind,
				Namespaced: tc.args == nil, Dir: "templates", Examples: "examples", CRDs: "crds"})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range want.Files {
				b, err := os.ReadFile(f.Path)
				if err != nil || !bytes.Equal(b, f.Data) {
					t.Errorf("%s: not the scaffold's (%v)", f.Path, err)
				}
			}
			// The sample renders offline, with the spec's values.
			out, err = runCommand(t, "render", "--templates", "templates", "-f", filepath.Join("examples", folder+".yaml"))
			if err != nil {
				t.Fatalf("render the sample: %v\n%s", err, out)
			}
			for _, s := range []string{"kind: Deployment", "name: " + folder + "-sample", tc.wantNS, "replicas: 2", "image: nginx:1.27", "readyReplicas: 0"} {
				if !strings.Contains(out, s) {
					t.Errorf("render output lacks %q:\n%s", s, out)
				}
			}
		})
	}
	// lint finds no error in either folder, their samples or their CRDs.
	if out, err := runCommand(t, "lint", "--templates", "templates"); err != nil {
		t.Errorf("lint: %v\n%s", err, out)
	}
	// Again: refused, and the message names what exists.
	out, err := runCommand(t, "create", "kind", "--group", "demo.example.com", "--version", "v1alpha1", "--kind", "WebApp")
	if err == nil || !strings.Contains(err.Error(), "refusing to overwrite") || !strings.Contains(err.Error(), filepath.Join("templates", "webapp")) ||
		!strings.Contains(err.Error(), filepath.Join("crds", "webapp.yaml")) {
		t.Errorf("create kind over an existing one: %v\n%s", err, out)
	}
}

// TestCreateKindCRD: the CRD file is the bytes `operator crd` writes for
// the scaffolded folder.
func TestCreateKindCRD(t *testing.T) {
	dir := t.TempDir()
	tmpl, crds := filepath.Join(dir, "t"), filepath.Join(dir, "c")
	if out, err := runCommand(t, "create", "kind", "--group", "demo.example.com", "--version", "v1", "--kind", "WebApp",
		"--dir", tmpl, "--crds", crds, "--examples", filepath.Join(dir, "e")); err != nil {
		t.Fatalf("create kind: %v\n%s", err, out)
	}
	regen := filepath.Join(dir, "regen")
	if out, err := runCommand(t, "crd", "--templates", tmpl, "--out", regen); err != nil {
		t.Fatalf("crd: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(crds, "webapp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(regen, "webapp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the scaffold's CRD differs from operator crd's:\n%s\n---\n%s", got, want)
	}
}

func TestCreateKindErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no flags", []string{"create", "kind"}, `required flag(s) "group", "kind", "version" not set`},
		{"bad group", []string{"create", "kind", "--group", "demo", "--version", "v1", "--kind", "WebApp"}, "a custom resource's group needs a dot"},
		{"bad version", []string{"create", "kind", "--group", "demo.example.com", "--version", "1.0", "--kind", "WebApp"}, "not a Kubernetes API version"},
		{"bad kind", []string{"create", "kind", "--group", "demo.example.com", "--version", "v1", "--kind", "web_app"}, "not UpperCamelCase"},
		{"argument", []string{"create", "kind", "WebApp"}, "unknown command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCommand(t, append(tc.args, "--dir", filepath.Join(dir, "t"), "--crds", filepath.Join(dir, "c"), "--examples", filepath.Join(dir, "e"))...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: %v, want %q\n%s", tc.args, err, tc.want, out)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("a refused create wrote %d entries", len(entries))
	}
}
