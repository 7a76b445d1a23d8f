package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmplop/operator/engine/rbac"
)

// TestRBACCommand runs `operator rbac` from the repository's root as the
// README says, with the default --crds (crds, which exists there).
func TestRBACCommand(t *testing.T) {
	t.Chdir("../../..")
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(&out, &errOut)
	cmd.SetArgs([]string{"rbac", "--templates", "templates"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("rbac: %v\n%s", err, errOut.String())
	}
	if errOut.Len() > 0 {
		t.Errorf("stderr: %s", errOut.String())
	}
	want, err := rbac.Generate(rbac.Options{Templates: "templates", CRDs: []string{"crds"}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("output differs from rbac.Generate with --crds crds:\n%s", out.String())
	}
	for _, s := range []string{"operator rbac --templates templates --crds crds", "kind: ClusterRole", "name: operator", "namespace: operator-system"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q", s)
		}
	}
}

func TestRBACCommandFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(&out, &errOut)
	cmd.SetArgs([]string{"rbac", "--templates", "../../../templates/memcached", "--crds", "../../../crds",
		"--namespace", "ops", "--service-account", "tmplop", "--name", "tmplop", "-o", "yaml"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("rbac: %v", err)
	}
	got := out.String()
	for _, s := range []string{"--namespace ops --service-account tmplop --name tmplop", "  name: tmplop\n  namespace: ops\n", "memcacheds/status"} {
		if !strings.Contains(got, s) {
			t.Errorf("output lacks %q:\n%s", s, got)
		}
	}
	if !strings.Contains(got, "deployments") || strings.Contains(got, "services") {
		t.Errorf("memcached renders Deployments only:\n%s", got)
	}
}

func TestRBACCommandErrors(t *testing.T) {
	dir := t.TempDir()
	computed := filepath.Join(dir, "computed")
	if err := os.MkdirAll(computed, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"kind.yaml": "apiVersion: example.com/v1\nkind: Widget\n",
		"cm.yaml":   "apiVersion: v1\nkind: {{ .Spec.kind }}\nmetadata: {name: x}\n",
	} {
		if err := os.WriteFile(filepath.Join(computed, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no --templates", []string{"rbac"}, `required flag(s) "templates" not set`},
		{"output format", []string{"rbac", "--templates", dir, "-o", "json"}, `--output "json": only yaml is supported`},
		{"computed kind", []string{"rbac", "--templates", dir}, filepath.Join(computed, "cm.yaml") + ":2: cannot know statically which kind"},
		{"missing --crds", []string{"rbac", "--templates", "../../../templates", "--crds", filepath.Join(dir, "nope")}, "--crds " + filepath.Join(dir, "nope")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			cmd := NewRootCommand(&out, &out)
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
