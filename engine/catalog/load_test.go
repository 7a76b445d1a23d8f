package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmplop/operator/engine/render"
)

func writeFolder(t *testing.T, root, name string, files map[string]string) {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n"

func TestLoad(t *testing.T) {
	root := t.TempDir()
	writeFolder(t, root, "good", map[string]string{
		"kind.yaml": "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nworkers: 4\nlookups:\n- apiVersion: v1\n  kind: Pod\n",
		"cm.yaml":   cm,
	})
	writeFolder(t, root, "broken-template", map[string]string{
		"kind.yaml": "apiVersion: a.example.com/v1\nkind: A\n",
		"cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }\n",
	})
	writeFolder(t, root, "unknown-field", map[string]string{
		"kind.yaml": "apiVersion: b.example.com/v1\nkind: B\nwokers: 2\n",
	})
	writeFolder(t, root, "no-kind", map[string]string{"kind.yaml": "apiVersion: c.example.com/v1\n"})
	writeFolder(t, root, "zz-duplicate", map[string]string{
		"kind.yaml": "apiVersion: cache.example.com/v1beta1\nkind: Memcached\n",
	})
	writeFolder(t, root, "not-a-kind", map[string]string{"README.md": "notes"})

	kinds, skipped, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 1 || kinds[0].Name != "good" {
		t.Fatalf("kinds = %v, want only good", kinds)
	}
	k := kinds[0]
	if k.GVK.Group != "cache.example.com" || k.GVK.Version != "v1alpha1" || k.GVK.Kind != "Memcached" {
		t.Errorf("GVK = %v", k.GVK)
	}
	if k.Workers() != 4 || len(k.LookupGVKs()) != 1 || k.LookupGVKs()[0].Kind != "Pod" {
		t.Errorf("workers %d lookups %v", k.Workers(), k.LookupGVKs())
	}
	if got := k.Templates.ChildTemplates(); len(got) != 1 || got[0] != "cm.yaml" {
		t.Errorf("child templates = %v", got)
	}

	want := map[string]string{
		"broken-template": "cm.yaml:4",
		"unknown-field":   `unknown field "wokers"`,
		"no-kind":         "apiVersion and kind are required",
		"zz-duplicate":    "already served by",
	}
	if len(skipped) != len(want) {
		t.Fatalf("skipped = %v, want %d", skipped, len(want))
	}
	for _, s := range skipped {
		frag, ok := want[filepath.Base(s.Dir)]
		if !ok || !strings.Contains(s.Error(), frag) {
			t.Errorf("skipped %s: %v, want it to mention %q", s.Dir, s, frag)
		}
	}
	for _, s := range skipped {
		if filepath.Base(s.Dir) == "broken-template" {
			var re *render.Error
			if !errors.As(s, &re) || re.Template != "cm.yaml" || re.Line != 4 {
				t.Errorf("broken template error = %#v, want a render.Error at cm.yaml:4", re)
			}
		}
	}
}

func TestLoadMissingRoot(t *testing.T) {
	if _, _, err := Load(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Fatal("want an error for a missing templates directory")
	}
}

// TestLoadConfigMapVolume: folders mounted from ConfigMap volumes are made
// of symlinks through ..data, to a timestamped directory the kubelet swaps.
func TestLoadConfigMapVolume(t *testing.T) {
	files := map[string]string{"kind.yaml": "apiVersion: v.example.com/v1\nkind: V\n", "cm.yaml": cm}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	// A volume holds files, so each folder is a volume of its own...
	folderVolume := t.TempDir()
	writeFolder(t, folderVolume, "..2026_11_23", files)
	link("..2026_11_23", filepath.Join(folderVolume, "..data"))
	for name := range files {
		link(filepath.Join("..data", name), filepath.Join(folderVolume, name))
	}
	// ...and the templates directory holds it through a symlink, as when
	// several volumes are mounted under one projected directory.
	root := t.TempDir()
	link(folderVolume, filepath.Join(root, "v"))

	kinds, skipped, err := Load(root)
	if err != nil || len(skipped) > 0 || len(kinds) != 1 {
		t.Fatalf("Load = %d kinds, skipped %v, err %v; want the volume's folder", len(kinds), skipped, err)
	}
	if got := kinds[0].Templates.ChildTemplates(); len(got) != 1 || got[0] != "cm.yaml" {
		t.Errorf("templates %v, want [cm.yaml]", got)
	}
	before := kinds[0].Fingerprint
	// The kubelet's update: a new timestamped directory, then ..data swapped.
	changed := map[string]string{"kind.yaml": files["kind.yaml"], "cm.yaml": cm + "data: {a: b}\n"}
	writeFolder(t, folderVolume, "..2026_11_24", changed)
	link("..2026_11_24", filepath.Join(folderVolume, "..data_tmp"))
	if err := os.Rename(filepath.Join(folderVolume, "..data_tmp"), filepath.Join(folderVolume, "..data")); err != nil {
		t.Fatal(err)
	}
	k, err := LoadKind(filepath.Join(root, "v"))
	if err != nil {
		t.Fatal(err)
	}
	if k.Fingerprint == before {
		t.Error("the fingerprint did not change with the swapped ..data")
	}
}
