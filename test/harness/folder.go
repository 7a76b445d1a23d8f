package harness

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFolder makes dir hold exactly files (name to content), as an author
// who rewrites a kind's folder leaves it: a file of an earlier version that
// files does not name is removed. The folder itself stays, so that the
// operator's watch of the templates directory never sees the kind go.
func WriteFolder(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range old {
		if _, kept := files[e.Name()]; !kept {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
