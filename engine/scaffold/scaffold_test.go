package scaffold

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmplop/operator/internal/testsupport/golden"
)

func options(dir string, namespaced bool, kind string) Options {
	return Options{
		Group: "demo.example.com", Version: "v1alpha1", Kind: kind, Namespaced: namespaced,
		Dir: filepath.Join(dir, "templates"), Examples: filepath.Join(dir, "examples"), CRDs: filepath.Join(dir, "crds"),
	}
}

// archive is the files as one text, each under a "-- path --" line: one
// golden file per scaffold, readable in a diff.
func archive(files []File) []byte {
	var b bytes.Buffer
	for _, f := range files {
		b.WriteString("-- " + filepath.ToSlash(f.Path) + " --\n")
		b.Write(f.Data)
	}
	return b.Bytes()
}

// TestGolden compares the scaffold of a namespaced and of a cluster-scoped
// kind with testdata/<case>.golden.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name       string
		kind       string
		namespaced bool
	}{
		{"namespaced", "WebApp", true},
		{"cluster", "Site", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Files(options("", tc.namespaced, tc.kind))
			if err != nil {
				t.Fatal(err)
			}
			got := archive(res.Files)
			golden.Check(t, filepath.Join("testdata", tc.name+".golden"), got)
			folder := strings.ToLower(tc.kind)
			var paths []string
			for _, f := range res.Files {
				paths = append(paths, filepath.ToSlash(f.Path))
			}
			wantPaths := []string{
				"templates/" + folder + "/kind.yaml", "templates/" + folder + "/_helpers.tpl",
				"templates/" + folder + "/deployment.yaml", "templates/" + folder + "/status.yaml",
				"crds/" + folder + ".yaml", "examples/" + folder + ".yaml",
			}
			if strings.Join(paths, " ") != strings.Join(wantPaths, " ") {
				t.Errorf("paths %v, want %v", paths, wantPaths)
			}
		})
	}
}

// TestWrite writes a scaffold and checks the files on disk are Files'.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	o := options(dir, true, "WebApp")
	res, err := Write(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Plural != "webapps" || res.CRDName != "webapps.demo.example.com" {
		t.Errorf("plural %q, CRD %q", res.Plural, res.CRDName)
	}
	want, err := Files(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range want.Files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, f.Data) {
			t.Errorf("%s differs from Files", f.Path)
		}
	}
}

// TestRefuseOverwrite: when any path exists, Write names every one that
// does and writes nothing.
func TestRefuseOverwrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		exist []string // relative to the temp dir; a trailing / makes a directory
	}{
		{"folder", []string{"templates/webapp/"}},
		{"crd", []string{"crds/webapp.yaml"}},
		{"example and crd", []string{"examples/webapp.yaml", "crds/webapp.yaml"}},
		{"one template", []string{"templates/webapp/status.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, p := range tc.exist {
				full := filepath.Join(dir, filepath.FromSlash(p))
				if strings.HasSuffix(p, "/") {
					mkdir(t, full)
					continue
				}
				mkdir(t, filepath.Dir(full))
				if err := os.WriteFile(full, []byte("mine\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := tree(t, dir)
			_, err := Write(options(dir, true, "WebApp"))
			var ee *ExistsError
			if !errors.As(err, &ee) {
				t.Fatalf("Write: %v, want an *ExistsError", err)
			}
			for _, p := range tc.exist {
				if !strings.Contains(err.Error(), filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(p, "/")))) {
					t.Errorf("error does not name %s: %v", p, err)
				}
			}
			if !strings.Contains(err.Error(), "nothing was written") {
				t.Errorf("error does not say nothing was written: %v", err)
			}
			if after := tree(t, dir); after != before {
				t.Errorf("Write changed the tree:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestBadNames: each bad flag value is refused with a message naming it,
// before anything is written.
func TestBadNames(t *testing.T) {
	cases := []struct {
		name                 string
		group, version, kind string
		want                 string
	}{
		{"no group", "", "v1", "WebApp", "--group is required"},
		{"group without dot", "demo", "v1", "WebApp", `--group "demo": a custom resource's group needs a dot`},
		{"group upper case", "Demo.example.com", "v1", "WebApp", `--group "Demo.example.com": not a DNS subdomain`},
		{"group underscore", "my_demo.example.com", "v1", "WebApp", "not a DNS subdomain"},
		{"group k8s.io", "widgets.k8s.io", "v1", "WebApp", "belong to Kubernetes"},
		{"group built in", "networking.k8s.io", "v1", "WebApp", "belong to Kubernetes"},
		{"no version", "demo.example.com", "", "WebApp", "--version is required"},
		{"version without v", "demo.example.com", "1", "WebApp", `--version "1": not a Kubernetes API version`},
		{"version v0", "demo.example.com", "v0", "WebApp", "not a Kubernetes API version"},
		{"version gamma", "demo.example.com", "v1gamma1", "WebApp", "not a Kubernetes API version"},
		{"version alpha alone", "demo.example.com", "v1alpha", "WebApp", "not a Kubernetes API version"},
		{"no kind", "demo.example.com", "v1", "", "--kind is required"},
		{"kind lower case", "demo.example.com", "v1", "webApp", `--kind "webApp": not UpperCamelCase`},
		{"kind dash", "demo.example.com", "v1", "Web-App", "not UpperCamelCase"},
		{"kind digit", "demo.example.com", "v1", "1App", "not UpperCamelCase"},
		{"kind long", "demo.example.com", "v1", "A" + strings.Repeat("b", maxKind), "longer than"},
		{"all three", "demo", "1", "web", "--group \"demo\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := options(dir, true, tc.kind)
			o.Group, o.Version = tc.group, tc.version
			_, err := Write(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Write: %v, want an error with %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("Write wrote %d entries", len(entries))
			}
		})
	}
	// Every bad flag is reported at once.
	err := Options{Group: "demo", Version: "1", Kind: "web", Dir: "t", Examples: "e", CRDs: "c"}.Validate()
	for _, s := range []string{"--group", "--version", "--kind"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Validate: %v, want it to name %s", err, s)
		}
	}
	for _, ok := range []Options{
		{Group: "a.b", Version: "v1", Kind: "A"},
		{Group: "scaffold.author.tmplop.io", Version: "v2beta3", Kind: "WebApp2"},
		{Group: "demo.example.com", Version: "v10alpha12", Kind: "HTTPRoute"},
	} {
		ok.Dir, ok.Examples, ok.CRDs = "t", "e", "c"
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v", ok, err)
		}
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// tree lists every path under dir with its content.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + "\n")
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
