package harness

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWriteFolder: the folder holds exactly the files of the last write;
// it is never removed in between.
func TestWriteFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kind")
	WriteFolder(t, dir, map[string]string{"kind.yaml": "a", "deployment.yaml": "b"})
	before, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	WriteFolder(t, dir, map[string]string{"kind.yaml": "c", "configmap.yaml": "d"})
	after, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the folder was made anew: a watch of the templates would have seen the kind go")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"configmap.yaml", "kind.yaml"}; !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "kind.yaml")); string(b) != "c" {
		t.Errorf("kind.yaml = %q, want the last write's", b)
	}
}
