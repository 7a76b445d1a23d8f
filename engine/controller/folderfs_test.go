package controller

import (
	"errors"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"
)

// TestConfigMapFS: a ConfigMap's keys read as a flat folder, through every
// check testing/fstest makes of a file system.
func TestConfigMapFS(t *testing.T) {
	cm := &corev1.ConfigMap{
		Data:       map[string]string{"kind.yaml": "apiVersion: e.io/v1\nkind: Widget\n", "deployment.yaml": "{{ .name }}", "_helpers.tpl": "", ".hidden": "x"},
		BinaryData: map[string][]byte{"logo.png": {0x89, 'P', 'N', 'G', 0}},
	}
	fsys := configMapFS(cm)
	if err := fstest.TestFS(fsys, "kind.yaml", "deployment.yaml", "_helpers.tpl", ".hidden", "logo.png"); err != nil {
		t.Fatal(err)
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{".hidden", "_helpers.tpl", "deployment.yaml", "kind.yaml", "logo.png"}; !slices.Equal(names, want) {
		t.Errorf("entries %v, want %v (sorted)", names, want)
	}
	data, err := fs.ReadFile(fsys, "logo.png")
	if err != nil || string(data) != "\x89PNG\x00" {
		t.Errorf("binary data %q, %v", data, err)
	}
	data[0] = 'X' // the caller owns what ReadFile returns
	if again, _ := fs.ReadFile(fsys, "logo.png"); again[0] != 0x89 {
		t.Error("ReadFile returned the folder's own bytes")
	}
	cases := map[string]error{
		"missing.yaml":  fs.ErrNotExist,
		"dir/kind.yaml": fs.ErrNotExist,
		"/kind.yaml":    fs.ErrInvalid,
		"../kind.yaml":  fs.ErrInvalid,
	}
	for name, want := range cases {
		if _, err := fsys.Open(name); !errors.Is(err, want) {
			t.Errorf("open %q: %v, want %v", name, err, want)
		}
	}
	if info, err := fs.Stat(fsys, "kind.yaml"); err != nil || info.IsDir() || info.Mode() != 0o444 || info.Size() != int64(len(cm.Data["kind.yaml"])) {
		t.Errorf("stat kind.yaml: %v, %v", info, err)
	}
}
