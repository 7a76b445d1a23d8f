package scaffold

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/internal/testsupport/golden"
)

// TestAddVersionGolden adds a version to each folder of testdata/versions
// and compares kind.yaml and the two conversion templates with
// testdata/versions/<case>.golden (`go test ./engine/scaffold -run
// TestAddVersionGolden -update` rewrites them). Each result loads, with
// the hub and the versions asked, and kind.yaml keeps every line of the
// original but the apiVersion's.
func TestAddVersionGolden(t *testing.T) {
	for _, tc := range []struct {
		name, folder, version string
		hub                   bool
		wantHub, wantStorage  string
		wantVersions          []string // in kind.yaml's order, the hub's place included
	}{
		{"single-hub", "single", "v1", true, "v1", "v1", []string{"v1alpha1", "v1"}},
		{"single", "single", "v1beta1", false, "v1alpha1", "v1alpha1", []string{"v1alpha1", "v1beta1"}},
		{"freeform-hub", "freeform", "v1", true, "v1", "v1", []string{"v1alpha1", "v1"}},
		{"several", "several", "v2beta1", false, "v1", "v1", []string{"v1alpha1", "v1", "v2beta1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			folder := filepath.Join("testdata", "versions", tc.folder)
			res, err := AddVersionFiles(VersionOptions{Folder: folder, Version: tc.version, Hub: tc.hub})
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "versions", tc.name+".golden"), archive(res.Files))
			if res.Hub != tc.wantHub {
				t.Errorf("hub %s, want %s", res.Hub, tc.wantHub)
			}

			// Loaded as the operator loads the folder.
			files, err := catalog.ReadFolder(os.DirFS(folder))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Files {
				files[filepath.Base(f.Path)] = f.Data
			}
			k, err := catalog.Compile(tc.folder, folder, files)
			if err != nil {
				t.Fatalf("the folder with the version does not load: %v", err)
			}
			var got []string
			for _, v := range k.Versions() {
				got = append(got, v.Name)
				if !v.Served {
					t.Errorf("version %s is not served", v.Name)
				}
				if v.Storage != (v.Name == tc.wantStorage) {
					t.Errorf("version %s: storage %v", v.Name, v.Storage)
				}
			}
			if k.Hub() != tc.wantHub || strings.Join(got, " ") != strings.Join(tc.wantVersions, " ") {
				t.Errorf("hub %s, versions %v; want hub %s, versions %v", k.Hub(), got, tc.wantHub, tc.wantVersions)
			}

			// Every line of the original kind.yaml is still there, in
			// order, but apiVersion's when the hub moved.
			before, err := os.ReadFile(filepath.Join(folder, catalog.KindFile))
			if err != nil {
				t.Fatal(err)
			}
			after := strings.Split(string(res.Files[0].Data), "\n")
			i := 0
			for _, line := range strings.Split(string(before), "\n") {
				if tc.hub && strings.HasPrefix(line, "apiVersion:") {
					continue
				}
				for i < len(after) && after[i] != line {
					i++
				}
				if i == len(after) {
					t.Errorf("kind.yaml lost line %q (or its order)", line)
					break
				}
			}
		})
	}
}

// TestAddVersionRefused: what the command does not do is refused with a
// clear error, before anything is written.
func TestAddVersionRefused(t *testing.T) {
	for _, tc := range []struct {
		name, folder, version string
		hub                   bool
		want                  string
	}{
		{"no folder", "", "v1", false, "--folder is required"},
		{"bad version", "single", "version1", false, `--version "version1": not a Kubernetes API version`},
		{"the hub", "single", "v1alpha1", false, "the kind has version v1alpha1 already"},
		{"a listed version", "several", "v1alpha1", false, "the kind has version v1alpha1 already"},
		{"a new hub over versions", "several", "v2", true, "a new hub would need every version's conversions rewritten to it; add v2 without --hub"},
		{"a crd.yaml", "crdfile", "v2", false, "the folder's versions are its crd.yaml's"},
		{"a folder that does not load", "missing", "v2", false, "read kind folder"},
		{"a conversion template exists", "stray", "v1", false, "refusing to overwrite what exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			folder := tc.folder
			if folder != "" {
				folder = filepath.Join("testdata", "versions", folder)
			}
			_, err := AddVersionFiles(VersionOptions{Folder: folder, Version: tc.version, Hub: tc.hub})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if tc.name == "a conversion template exists" {
				var ee *ExistsError
				if !errors.As(err, &ee) || len(ee.Paths) != 1 || filepath.Base(ee.Paths[0]) != "convert.v1.v1alpha1.yaml" {
					t.Errorf("error %#v, want an *ExistsError of convert.v1.v1alpha1.yaml", err)
				}
			}
		})
	}
}

// TestAddVersionWrite writes a version into a copy of a folder: the files
// on disk are AddVersionFiles', kind.yaml keeps its mode, and a second run
// for the same version writes nothing.
func TestAddVersionWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cart")
	copyDir(t, filepath.Join("testdata", "versions", "single"), dir)
	if err := os.Chmod(filepath.Join(dir, catalog.KindFile), 0o600); err != nil {
		t.Fatal(err)
	}
	o := VersionOptions{Folder: dir, Version: "v1", Hub: true}
	want, err := AddVersionFiles(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddVersion(o); err != nil {
		t.Fatal(err)
	}
	for _, f := range want.Files {
		got, err := os.ReadFile(f.Path)
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("%s on disk differs from AddVersionFiles' (%v)", f.Path, err)
		}
	}
	if info, err := os.Stat(filepath.Join(dir, catalog.KindFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("kind.yaml's mode after the edit: %v %v, want 0600", info.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		t.Errorf("the folder holds %d files after the edit, want 4 (no temporary file left)", len(entries))
	}
	kindYAML, _ := os.ReadFile(filepath.Join(dir, catalog.KindFile))
	if _, err := AddVersion(o); err == nil || !strings.Contains(err.Error(), "the kind has version v1 already") {
		t.Errorf("a second run: %v, want the version refused", err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, catalog.KindFile)); !bytes.Equal(again, kindYAML) {
		t.Errorf("a refused run changed kind.yaml")
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
