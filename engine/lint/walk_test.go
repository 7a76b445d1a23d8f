package lint

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tmplop/operator/engine/crd"
)

// TestWalkYAMLSkipsFolders: below the samples' directory, a kind folder
// and a project of its own (a directory with templates/) are not read as
// samples; everything else is, at any depth.
func TestWalkYAMLSkipsFolders(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{
		"a.yaml", "deep/b.yml", "deep/deeper/c.json",
		"folder/kind.yaml", "folder/deployment.yaml",
		"project/templates/w/kind.yaml", "project/examples/w.yaml",
		".hidden/d.yaml", "notes.txt",
	} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := walkYAML(dir, func(file string, _ []byte) {
		rel, _ := filepath.Rel(dir, file)
		got = append(got, filepath.ToSlash(rel))
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"a.yaml", "deep/b.yml", "deep/deeper/c.json"}
	if !slices.Equal(got, want) {
		t.Errorf("walked %v, want %v", got, want)
	}
	// The project itself, given as the samples' directory, is walked.
	got = nil
	if err := walkYAML(filepath.Join(dir, "project", "examples"), func(file string, _ []byte) { got = append(got, filepath.Base(file)) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"w.yaml"}) {
		t.Errorf("walked %v in the project's examples, want [w.yaml]", got)
	}
}

// TestShippedVersionsExample: docs/versions.md's tutorial result, the
// Memcached of two versions in examples/versions, lints without an error,
// and its samples at both versions are rendered (none is stray: each is
// converted to the hub and back).
func TestShippedVersionsExample(t *testing.T) {
	root := "../../examples/versions"
	fs, err := Run(t.Context(), Options{Templates: root + "/templates", Examples: []string{root + "/examples"},
		CRDs: KindCRD(crd.ForKind, crd.ErrNoSchema), Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Severity == Error || f.Code == CodeStraySample || f.Code == CodeConversion {
			t.Errorf("%s", f)
		} else {
			t.Logf("%s", f)
		}
	}
}
