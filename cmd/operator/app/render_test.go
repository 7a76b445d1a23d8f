package app

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tmplop/operator/internal/testsupport/golden"
)

// TestRenderCommand renders every example with the repository's templates
// and compares with golden files (timestamps masked).
func TestRenderCommand(t *testing.T) {
	examples, err := filepath.Glob("../../../examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	stamp := regexp.MustCompile(`lastTransitionTime: ".*"`)
	for _, ex := range examples {
		name := strings.TrimSuffix(filepath.Base(ex), ".yaml")
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			cmd := NewRootCommand(&out, &out)
			cmd.SetArgs([]string{"render", "--templates", "../../../templates", "-f", ex})
			if err := cmd.Execute(); err != nil {
				t.Fatalf("render: %v\n%s", err, out.String())
			}
			got := stamp.ReplaceAll(out.Bytes(), []byte(`lastTransitionTime: "<now>"`))
			golden.Check(t, filepath.Join("testdata", name+".golden.yaml"), got)
		})
	}
}

func TestRenderCommandErrors(t *testing.T) {
	dir := t.TempDir()
	cr := filepath.Join(dir, "cr.yaml")
	cases := []struct{ name, cr, want string }{
		{"missing required field", "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: m}\nspec: {}\n", "deployment.yaml:"},
		{"kind without folder", "apiVersion: nope.example.com/v1\nkind: Nope\nmetadata: {name: n}\n", "no kind folder"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(cr, []byte(tc.cr), 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			cmd := NewRootCommand(&out, &out)
			cmd.SetArgs([]string{"render", "--templates", "../../../templates", "-f", cr})
			if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
