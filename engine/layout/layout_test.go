package layout

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

func TestRoleOf(t *testing.T) {
	cases := map[string]Role{
		"kind.yaml":        Kind,
		"crd.yaml":         CRD,
		"status.yaml":      Status,
		"_helpers.tpl":     Helper,
		"_any":             Helper,
		"deployment.yaml":  Child,
		"service.yml":      Child,
		"README.md":        Ignored,
		".deployment.yaml": Ignored, // an editor's swap file
		"..data":           Ignored,
		"sub/child.yaml":   Ignored,
		"":                 Ignored,
		"values.json":      Ignored,
		// A conversion is a template of its own Set, never a child.
		"convert.v1alpha1.v1.yaml": Conversion,
		"convert.v1.v1beta2.yaml":  Conversion,
		"convert.yaml":             Child, // no versions: a child named so
		"convert.v1.yaml":          Child, // one version: not a conversion
		"convert.a.b.c.yaml":       Child, // a version has no dot
		"convert..v1.yaml":         Child,
		"convert.v1alpha1.v1.yml":  Child, // conversions are .yaml only
		"_convert.v1.v2.yaml":      Helper,
	}
	for name, want := range cases {
		if got := RoleOf(name); got != want {
			t.Errorf("RoleOf(%q) = %s, want %s", name, got, want)
		}
	}
}

// TestConversionFile: ConversionFile and ParseConversion are inverses, and
// the file is a Conversion, never a template of the folder's Set.
func TestConversionFile(t *testing.T) {
	for _, tc := range [][2]string{{"v1alpha1", "v1"}, {"v1", "v1alpha1"}, {"v2beta3", "v10"}} {
		name := ConversionFile(tc[0], tc[1])
		from, to, ok := ParseConversion(name)
		if !ok || from != tc[0] || to != tc[1] {
			t.Errorf("ParseConversion(%q) = %q, %q, %v, want %q, %q", name, from, to, ok, tc[0], tc[1])
		}
		if r := RoleOf(name); r != Conversion || r.Template() {
			t.Errorf("RoleOf(%q) = %s (template %v), want a conversion, not a template of the Set", name, r, r.Template())
		}
	}
	for _, name := range []string{"convert.yaml", "convert.v1.yaml", "convert.a.b.c.yaml", "x.v1.v2.yaml", "convert.v1.v2.yml", "convert..v2.yaml"} {
		if _, _, ok := ParseConversion(name); ok {
			t.Errorf("ParseConversion(%q) ok, want not a conversion", name)
		}
	}
	files := Files{"convert.v1.v2.yaml": []byte("c"), "a.yaml": []byte("a"), "kind.yaml": []byte("k")}
	if c := files.Conversions(); len(c) != 1 || c["convert.v1.v2.yaml"] != "c" {
		t.Errorf("Conversions() = %v, want convert.v1.v2.yaml alone", c)
	}
	if tmpl := files.Templates(); len(tmpl) != 1 || tmpl["a.yaml"] != "a" {
		t.Errorf("Templates() = %v, want a.yaml alone", tmpl)
	}
}

// TestRead: only the files that have a role are read; sub-folders (and
// symlinks to them, as a mounted ConfigMap volume has) are not.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"kind.yaml": "k", "a.yaml": "a", "_h.tpl": "h", "README.md": "r", ".a.yaml.swp": "s"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub.yaml", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	files, err := Read(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	got := files.Names()
	want := []string{"_h.tpl", "a.yaml", "kind.yaml"}
	if len(got) != len(want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("read %v, want %v", got, want)
		}
	}
	if tmpl := files.Templates(); len(tmpl) != 2 || tmpl["a.yaml"] != "a" || tmpl["_h.tpl"] != "h" {
		t.Errorf("Templates() = %v, want a.yaml and _h.tpl", tmpl)
	}
}

// TestFingerprint: the same files give the same fingerprint whatever the
// source; a changed byte or name changes it; a file without a role does
// not count.
func TestFingerprint(t *testing.T) {
	a, _ := Read(fstest.MapFS{"kind.yaml": {Data: []byte("k")}, "a.yaml": {Data: []byte("a")}})
	b, _ := Read(fstest.MapFS{"a.yaml": {Data: []byte("a")}, "kind.yaml": {Data: []byte("k")}, "NOTES.md": {Data: []byte("n")}})
	c, _ := Read(fstest.MapFS{"kind.yaml": {Data: []byte("k")}, "a.yaml": {Data: []byte("b")}})
	d, _ := Read(fstest.MapFS{"kind.yaml": {Data: []byte("k")}, "b.yaml": {Data: []byte("a")}})
	if a.Fingerprint() != b.Fingerprint() {
		t.Errorf("same files, different fingerprints")
	}
	if a.Fingerprint() == c.Fingerprint() || a.Fingerprint() == d.Fingerprint() {
		t.Errorf("a changed file or name kept the fingerprint")
	}
}

// TestFromMap: a folder given as data keeps the files Read would read.
func TestFromMap(t *testing.T) {
	files := FromMap(map[string][]byte{"kind.yaml": []byte("k"), "a.yaml": []byte("a"), "README.md": []byte("r"), ".swp": nil})
	if got := files.Names(); len(got) != 2 || got[0] != "a.yaml" || got[1] != "kind.yaml" {
		t.Errorf("FromMap kept %v, want a.yaml and kind.yaml", got)
	}
}
