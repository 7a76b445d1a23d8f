package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestVersionedCRDs: migrate --templates picks the CRDs of the folders of
// several versions, in a directory of folders or one folder, and refuses
// a directory where a folder does not load (it may be one of several
// versions).
func TestVersionedCRDs(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"gauge":     filepath.Join("..", "..", "..", "test", "incluster", "testdata", "versions", "gauge"),
		"memcached": filepath.Join("..", "..", "..", "templates", "memcached"),
	} {
		if err := os.CopyFS(filepath.Join(dir, name), os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{dir, []string{"gauges.incluster.tmplop.io"}},
		{filepath.Join(dir, "gauge"), []string{"gauges.incluster.tmplop.io"}},
		{filepath.Join(dir, "memcached"), nil},
	} {
		got, err := versionedCRDs(tc.dir)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("versionedCRDs(%s) = %q, %v; want %q", tc.dir, got, err, tc.want)
		}
	}

	if err := os.MkdirAll(filepath.Join(dir, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken", "kind.yaml"), []byte("apiVersion: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := versionedCRDs(dir); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("versionedCRDs with a broken folder = %q, %v; want its error", got, err)
	}
}
