package lint

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tmplop/operator/engine/crd"
	"github.com/tmplop/operator/internal/testsupport/golden"
)

// fixedNow is the renders' clock in every case.
var fixedNow = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

const goldenDir = "testdata/golden"

// caseCode is the code a case is named after: testdata/LNT208-.../
var caseCode = regexp.MustCompile(`^(LNT\d{3})-`)

// lintCase lints testdata/<name>: its templates/, with examples/ and crds/
// when they exist, as `operator lint --templates .../templates` would.
func lintCase(t *testing.T, name string) []Finding {
	t.Helper()
	dir := filepath.Join("testdata", name)
	o := Options{Templates: filepath.Join(dir, "templates"), Now: fixedNow}
	if _, err := os.Stat(filepath.Join(dir, "examples")); err == nil {
		o.Examples = []string{filepath.Join(dir, "examples")}
	}
	var crds []string
	if _, err := os.Stat(filepath.Join(dir, "crds")); err == nil {
		crds = []string{filepath.Join(dir, "crds")}
	}
	files, crdFindings := ReadCRDFiles(crds...)
	o.CRDs = Chain(KindCRD(crd.ForKind, crd.ErrNoSchema), files)
	fs, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	return Sort(append(fs, crdFindings...))
}

// TestGolden lints every testdata/<case>/ and compares the text output
// with testdata/golden/<case>.txt. A case named after a code must report
// that code, with the code's severity. Run `go test ./engine/lint -run
// TestGolden -update` to rewrite the golden files after an intended change,
// and review the diff.
func TestGolden(t *testing.T) {
	cases, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if !c.IsDir() || c.Name() == "golden" {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			fs := lintCase(t, c.Name())
			var buf bytes.Buffer
			if err := WriteText(&buf, fs); err != nil {
				t.Fatal(err)
			}
			got := []byte(strings.ReplaceAll(buf.String(), "testdata/"+c.Name()+"/", ""))

			if m := caseCode.FindStringSubmatch(c.Name()); m != nil {
				found := false
				for _, f := range fs {
					if f.Code == m[1] {
						found = true
						if f.Severity != severityOf[m[1]] {
							t.Errorf("%s reported as %s, want %s: %s", f.Code, f.Severity, severityOf[m[1]], f)
						}
					}
				}
				if !found {
					t.Errorf("case %s does not report %s:\n%s", c.Name(), m[1], got)
				}
			}
			for _, f := range fs {
				if f.Severity != severityOf[f.Code] {
					t.Errorf("%s has severity %s, but the code's is %s", f, f.Severity, severityOf[f.Code])
				}
			}

			golden.Check(t, filepath.Join(goldenDir, c.Name()+".txt"), got)
		})
	}
}

// TestEveryCodeHasACase: each code has a testdata case named after it, and
// docs/lint.md documents it.
func TestEveryCodeHasACase(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	cased := map[string]bool{}
	for _, e := range entries {
		if m := caseCode.FindStringSubmatch(e.Name()); m != nil {
			cased[m[1]] = true
		}
	}
	docs, err := os.ReadFile("../../docs/lint.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range Codes {
		if seen[c.Code] {
			t.Errorf("%s is listed twice in Codes", c.Code)
		}
		seen[c.Code] = true
		if !cased[c.Code] {
			t.Errorf("%s has no testdata/%s-<name>/ case", c.Code, c.Code)
		}
		if !regexp.MustCompile(`(?m)^#+ ` + c.Code + ` `).Match(docs) {
			t.Errorf("docs/lint.md has no heading for %s", c.Code)
		}
	}
	for code := range cased {
		if !seen[code] {
			t.Errorf("testdata case for %s, which is not a code", code)
		}
	}
}

// TestShippedTemplates: the repository's folders, examples and CRDs lint
// without an error.
func TestShippedTemplates(t *testing.T) {
	files, fs := ReadCRDFiles("../../crds")
	found, err := Run(t.Context(), Options{Templates: "../../templates", Examples: []string{"../../examples"},
		CRDs: Chain(KindCRD(crd.ForKind, crd.ErrNoSchema), files), Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	fs = Sort(append(fs, found...))
	if len(fs) == 0 {
		t.Fatal("no finding at all: the empty-spec renders of the shipped folders should report their required fields")
	}
	for _, f := range fs {
		if f.Severity == Error {
			t.Errorf("%s", f)
		} else {
			t.Logf("%s", f)
		}
	}
}

// TestOneFolder: with --templates naming one kind folder, the samples of
// other kinds are not reported; those of the folder's kind still are.
func TestOneFolder(t *testing.T) {
	dir := "testdata/LNT012-stray-sample"
	fs, err := Run(t.Context(), Options{Templates: dir + "/templates/widget", Examples: []string{dir + "/examples"}, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		if f.Code == CodeStraySample {
			got = append(got, f.Where())
		}
	}
	want := []string{dir + "/examples/widget.yaml:1", dir + "/examples/widget.yaml:9"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("LNT012 at %v, want %v (not the ConfigMap at line 5)", got, want)
	}
}
