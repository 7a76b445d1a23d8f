package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCRDCommand runs `operator crd` from the repository's root as the README
// says: printed, the CRDs are crds/ in one stream; with --out they are crds/.
func TestCRDCommand(t *testing.T) {
	t.Chdir("../../..")
	// Every shipped folder, in the order the command reads them.
	kinds, err := filepath.Glob(filepath.Join("templates", "*", "kind.yaml"))
	if err != nil || len(kinds) < 6 {
		t.Fatalf("shipped folders: %v %v", kinds, err)
	}
	var names []string
	for _, k := range kinds {
		names = append(names, filepath.Base(filepath.Dir(k)))
	}
	var want [][]byte
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join("crds", n+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, data)
	}

	var out, errOut bytes.Buffer
	cmd := NewRootCommand(&out, &errOut)
	cmd.SetArgs([]string{"crd", "--templates", "templates"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("crd: %v\n%s", err, errOut.String())
	}
	if errOut.Len() > 0 {
		t.Errorf("stderr: %s", errOut.String())
	}
	if got := bytes.Join(want, []byte("---\n")); !bytes.Equal(out.Bytes(), got) {
		t.Errorf("the stream is not crds/ (regenerate: go run ./cmd/operator crd --templates templates --out crds):\n%s", out.String())
	}

	dir := t.TempDir()
	cmd = NewRootCommand(&out, &errOut)
	cmd.SetArgs([]string{"crd", "--templates", "templates", "--out", filepath.Join(dir, "crds")})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("crd --out: %v", err)
	}
	for i, n := range names {
		got, err := os.ReadFile(filepath.Join(dir, "crds", n+".yaml"))
		if err != nil || !bytes.Equal(got, want[i]) {
			t.Errorf("--out %s.yaml differs from crds/ (%v)", n, err)
		}
	}
}

func TestCRDCommandFolders(t *testing.T) {
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
	write("good/kind.yaml", "apiVersion: good.example.com/v1\nkind: Good\nspec: {size: integer | minimum=1}\n")
	write("plain/kind.yaml", "apiVersion: plain.example.com/v1\nkind: Plain\n")

	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		cmd := NewRootCommand(&out, &errOut)
		cmd.SetArgs(append([]string{"crd"}, args...))
		err := cmd.Execute()
		return out.String(), errOut.String(), err
	}

	// A folder without a schema is skipped with a warning.
	out, errOut, err := run("--templates", root, "--out", filepath.Join(root, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if out != "" || !strings.HasPrefix(errOut, "Warning: "+filepath.Join(root, "plain")+": kind Plain.plain.example.com: no CRD") {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
	if _, err := os.Stat(filepath.Join(root, "out", "good.yaml")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(root, "out", "plain.yaml")); err == nil {
		t.Error("plain.yaml written for a folder without a schema")
	}

	// One folder, printed.
	out, _, err = run("--templates", filepath.Join(root, "good"))
	if err != nil || !strings.Contains(out, "name: goods.good.example.com") || !strings.Contains(out, "minimum: 1") {
		t.Errorf("one folder: %v\n%s", err, out)
	}

	// A broken folder: an error naming the file and the field, nothing written.
	write("bad/kind.yaml", "apiVersion: bad.example.com/v1\nkind: Bad\nspec: {size: integer | minimun=1}\n")
	if err := os.RemoveAll(filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	_, _, err = run("--templates", root, "--out", filepath.Join(root, "out"))
	if err == nil || !strings.Contains(err.Error(), filepath.Join(root, "bad", "kind.yaml")+`:3: spec.size: unknown marker "minimun"`) {
		t.Errorf("broken folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "out")); err == nil {
		t.Error("files written despite a broken folder")
	}

	if _, _, err := run(); err == nil {
		t.Error("no error without --templates")
	}
}
