// Package golden compares a test's output with a golden file in testdata/,
// as Helm's pkg/engine tests do, and rewrites the file when the test binary
// runs with -update:
//
//	go test ./engine/render -run TestGolden -update
//
// then review the diff. It registers the -update flag of every test binary
// that imports it, so such a package declares no flag of its own.
//
// It is test support: only _test.go files import it (it imports testing),
// so it never reaches the operator's binary.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// Check compares got with the golden file at path and fails the test when
// they differ, showing the difference; with -update it writes got to path
// instead (creating its folder). It reports whether the file holds got.
func Check(t testing.TB, path string, got []byte) bool {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return true
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v (run with -update to create it)", err)
		return false
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (- golden, + got; run with -update to accept):\n%s", path, Diff(string(want), string(got)))
		return false
	}
	return true
}

// Doc is one document of a golden YAML stream: a "# Header" comment line,
// then Value as YAML (nothing when Value is nil).
type Doc struct {
	Header string
	Value  any
}

// YAML writes docs as `helm template` prints a release: documents separated
// by "---", each marked with its header comment.
func YAML(t testing.TB, docs ...Doc) []byte {
	t.Helper()
	var out bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			out.WriteString("---\n")
		}
		fmt.Fprintf(&out, "# %s\n", d.Header)
		if d.Value == nil {
			continue
		}
		data, err := yaml.Marshal(d.Value)
		if err != nil {
			t.Fatalf("%s: %v", d.Header, err)
		}
		out.Write(data)
	}
	return out.Bytes()
}
