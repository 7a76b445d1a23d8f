package golden

import (
	"os"
	"path/filepath"
	"testing"
)

func TestYAML(t *testing.T) {
	got := string(YAML(t,
		Doc{Header: "Source: a.yaml", Value: map[string]any{"kind": "ConfigMap"}},
		Doc{Header: "Status: status.yaml", Value: map[string]any(nil)},
		Doc{Header: "RequeueAfter: children 1s, status 0s"},
	))
	want := "# Source: a.yaml\nkind: ConfigMap\n---\n# Status: status.yaml\nnull\n---\n# RequeueAfter: children 1s, status 0s\n"
	if got != want {
		t.Errorf("YAML:\n%s\nwant:\n%s", got, want)
	}
}

func TestDiff(t *testing.T) {
	got := Diff("a\nb\nc\nd\ne\n", "a\nb\nX\nd\ne\n")
	want := "  b\n+ X\n- c\n  d\n"
	if got != want {
		t.Errorf("Diff:\n%q\nwant:\n%q", got, want)
	}
}

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "golden.yaml")
	if err := os.WriteFile(path, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !Check(t, path, []byte("same\n")) {
		t.Error("Check of equal content reports a difference")
	}
}
