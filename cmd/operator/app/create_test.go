package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

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

// TestCreateVersion evolves a copy of the shipped Memcached folder as
// docs/versions.md's tutorial does: v1 added as the hub, then v2beta1 as
// one more version. After each step the CRD is regenerated and `operator
// lint` finds nothing worse than info (its sample, at v1alpha1, round-trips
// through every version), the CRD is of several versions with the
// operator's webhook, and the same version again is refused with nothing
// written.
func TestCreateVersion(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	copyTree(t, filepath.Join(root, "templates", "memcached"), filepath.Join("templates", "memcached"))
	copyTree(t, filepath.Join(root, "examples", "memcached.yaml"), filepath.Join("examples", "memcached.yaml"))
	lintClean := func(step string) {
		t.Helper()
		if out, err := runCommand(t, "crd", "--templates", "templates", "--out", "crds"); err != nil {
			t.Fatalf("%s: crd: %v\n%s", step, err, out)
		}
		if out, err := runCommand(t, "lint", "--templates", "templates", "--fail-on", "warning"); err != nil {
			t.Errorf("%s: lint: %v\n%s", step, err, out)
		}
	}
	lintClean("before")

	steps := []struct {
		args      []string
		hub       string
		versions  []string
		templates []string
	}{
		{[]string{"--version", "v1", "--hub"}, "cache.example.com/v1", []string{"v1alpha1", "v1"},
			[]string{"convert.v1.v1alpha1.yaml", "convert.v1alpha1.v1.yaml"}},
		{[]string{"--version", "v2beta1"}, "cache.example.com/v1", []string{"v1alpha1", "v1", "v2beta1"},
			[]string{"convert.v1.v1alpha1.yaml", "convert.v1.v2beta1.yaml", "convert.v1alpha1.v1.yaml", "convert.v2beta1.v1.yaml"}},
	}
	for _, s := range steps {
		step := strings.Join(s.args, " ")
		out, err := runCommand(t, append([]string{"create", "version", "--folder", filepath.Join("templates", "memcached")}, s.args...)...)
		if err != nil {
			t.Fatalf("create version %s: %v\n%s", step, err, out)
		}
		if !strings.Contains(out, "operator lint --templates templates ") {
			t.Errorf("create version %s: the output says nothing of what to run next:\n%s", step, out)
		}
		lintClean(step)
		var crd apiextensionsv1.CustomResourceDefinition
		readYAML(t, filepath.Join("crds", "memcached.yaml"), &crd)
		var names []string
		for _, v := range crd.Spec.Versions {
			names = append(names, v.Name)
		}
		if strings.Join(names, " ") != strings.Join(s.versions, " ") || crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
			t.Errorf("create version %s: the CRD's versions %v (want %v), conversion %+v", step, names, s.versions, crd.Spec.Conversion)
		}
		var kind struct{ APIVersion string }
		readYAML(t, filepath.Join("templates", "memcached", "kind.yaml"), &kind)
		if kind.APIVersion != s.hub {
			t.Errorf("create version %s: kind.yaml's apiVersion %s, want %s", step, kind.APIVersion, s.hub)
		}
		var convs []string
		entries, _ := os.ReadDir(filepath.Join("templates", "memcached"))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "convert.") {
				convs = append(convs, e.Name())
			}
		}
		if strings.Join(convs, " ") != strings.Join(s.templates, " ") {
			t.Errorf("create version %s: conversion templates %v, want %v", step, convs, s.templates)
		}
	}

	before, _ := os.ReadFile(filepath.Join("templates", "memcached", "kind.yaml"))
	out, err := runCommand(t, "create", "version", "--folder", filepath.Join("templates", "memcached"), "--version", "v2beta1")
	if err == nil || !strings.Contains(err.Error(), "the kind has version v2beta1 already") {
		t.Errorf("create version of a version the kind has: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(filepath.Join("templates", "memcached", "kind.yaml")); !bytes.Equal(before, after) {
		t.Errorf("a refused create version changed kind.yaml")
	}
	if _, err := runCommand(t, "create", "version", "--version", "v3"); err == nil || !strings.Contains(err.Error(), `required flag(s) "folder" not set`) {
		t.Errorf("create version without --folder: %v", err)
	}
}

// copyTree copies a file or a directory of files.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	info, err := os.Stat(from)
	if err != nil {
		t.Fatal(err)
	}
	if !info.IsDir() {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyTree(t, filepath.Join(from, e.Name()), filepath.Join(to, e.Name()))
	}
}
