package chart

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRead: a chart's files as Helm's LoadDir reads them: sub-folders,
// .helmignore's rules, and a folder reached through a symlink.
func TestRead(t *testing.T) {
	root := t.TempDir()
	for name, content := range map[string]string{
		"web/Chart.yaml":             "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"web/.helmignore":            "*.md\nsecret/\n",
		"web/README.md":              "ignored",
		"web/templates/cm.yaml":      "kind: ConfigMap",
		"web/secret/key":             "ignored folder",
		"shared/config/app.conf":     "linked",
		"web/templates/sub/svc.yaml": "kind: Service",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "shared/config"), filepath.Join(root, "web/files")); err != nil {
		t.Fatal(err)
	}
	files, err := Read(os.DirFS(filepath.Join(root, "web")))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".helmignore", "Chart.yaml", "files/app.conf", "templates/cm.yaml", "templates/sub/svc.yaml"}
	if got := files.Names(); !slices.Equal(got, want) {
		t.Fatalf("files = %q, want %q", got, want)
	}
	if string(files["files/app.conf"]) != "linked" {
		t.Fatalf("files/app.conf = %q", files["files/app.conf"])
	}
}
