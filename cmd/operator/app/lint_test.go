package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tmplop/operator/engine/lint"
)

// lintCases are folders of engine/lint's golden tests.
const lintCases = "../../../engine/lint/testdata/"

func runLintCommand(t *testing.T, args ...string) (stdout string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(&out, &errOut)
	cmd.SetArgs(append([]string{"lint"}, args...))
	err = cmd.Execute()
	if errOut.Len() > 0 {
		t.Errorf("stderr: %s", errOut.String())
	}
	return out.String(), err
}

// TestLintCommand runs `operator lint --templates templates` from the
// repository's root, as docs/lint.md says: examples and crds are found
// next to templates, and the shipped folders have no error.
func TestLintCommand(t *testing.T) {
	t.Chdir("../../..")
	out, err := runLintCommand(t, "--templates", "templates")
	if err != nil {
		t.Fatalf("lint: %v\n%s", err, out)
	}
	// The empty-spec render of memcached reports its required size, at the
	// line of the required call.
	want := "templates/memcached/deployment.yaml:18: info LNT100 spec.size is required (rendered against an empty spec)\n"
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	// The samples were read (no LNT011) and so were the CRDs (no LNT315).
	for _, code := range []string{lint.CodeNoSample, lint.CodeNoCRD, lint.CodeStraySample} {
		if strings.Contains(out, code) {
			t.Errorf("output has %s: examples or crds not found next to templates:\n%s", code, out)
		}
	}
}

func TestLintCommandJSON(t *testing.T) {
	out, err := runLintCommand(t, "--templates", lintCases+"LNT400-undeclared-lookup/templates", "-o", "json")
	var lf *lintFailed
	if !errors.As(err, &lf) || lf.n != 1 {
		t.Fatalf("err = %v, want 1 error", err)
	}
	var fs []lint.Finding
	if err := json.Unmarshal([]byte(out), &fs); err != nil {
		t.Fatalf("not a JSON array of findings: %v\n%s", err, out)
	}
	found := false
	for _, f := range fs {
		if f.Code == lint.CodeUndeclaredLookup {
			found = true
			if !strings.HasSuffix(f.File, "LNT400-undeclared-lookup/templates/widget/configmap.yaml") {
				t.Errorf("file = %q", f.File)
			}
			if f.Line != 1 || f.Severity != lint.Error || !strings.Contains(f.Message, `"Secret"`) {
				t.Errorf("finding = %+v", f)
			}
		}
	}
	if !found {
		t.Errorf("no %s in %s", lint.CodeUndeclaredLookup, out)
	}

	// No finding at all is an empty array, not null.
	out, err = runLintCommand(t, "--templates", lintCases+"LNT315-no-crd/templates", "-o", "json", "--examples", lintCases+"LNT315-no-crd/examples",
		"--crds", lintCases+"clean/crds")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != "[]" {
		t.Fatalf("output %q, want []", out)
	}
}

func TestLintCommandFailOn(t *testing.T) {
	// LNT401 is a warning: no failure by default, one with --fail-on warning.
	dir := lintCases + "LNT401-computed-lookup/templates"
	if out, err := runLintCommand(t, "--templates", dir); err != nil {
		t.Fatalf("warnings only, err = %v\n%s", err, out)
	}
	_, err := runLintCommand(t, "--templates", dir, "--fail-on", "warning")
	var lf *lintFailed
	if !errors.As(err, &lf) || lf.n != 1 || !strings.Contains(err.Error(), "warning or worse") {
		t.Fatalf("--fail-on warning: err = %v", err)
	}
	for _, args := range [][]string{{"-o", "yaml"}, {"--fail-on", "fatal"}} {
		if _, err := runLintCommand(t, append([]string{"--templates", dir}, args...)...); err == nil || errors.As(err, &lf) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
	if _, err := runLintCommand(t, "--templates", t.TempDir()+"/missing"); err == nil {
		t.Error("a missing templates directory: no error")
	}
}

// TestLintLiveFlags: --kubeconfig belongs to --live, and --live with a
// kubeconfig that does not load is an error naming it, not findings.
func TestLintLiveFlags(t *testing.T) {
	dir := lintCases + "clean/templates"
	missing := t.TempDir() + "/no-kubeconfig"
	var lf *lintFailed
	if _, err := runLintCommand(t, "--templates", dir, "--kubeconfig", missing); err == nil || errors.As(err, &lf) || !strings.Contains(err.Error(), "--kubeconfig is for --live") {
		t.Errorf("--kubeconfig without --live: err = %v", err)
	}
	if _, err := runLintCommand(t, "--templates", dir, "--live", "--kubeconfig", missing); err == nil || errors.As(err, &lf) || !strings.Contains(err.Error(), "no-kubeconfig") {
		t.Errorf("--live with a missing kubeconfig: err = %v", err)
	}
}

// TestLintExitStatus runs the command line as a process: exit status 1
// with an error finding, 0 without.
func TestLintExitStatus(t *testing.T) {
	if os.Getenv("LINT_TEST_MAIN") == "1" {
		os.Args = append([]string{"operator", "lint"}, strings.Fields(os.Getenv("LINT_TEST_ARGS"))...)
		os.Exit(Main())
	}
	for _, tc := range []struct {
		args string
		want int
	}{
		{"--templates " + lintCases + "clean/templates", 0},
		{"--templates " + lintCases + "LNT208-duplicate-child/templates", 1},
		{"--templates " + lintCases + "LNT401-computed-lookup/templates --fail-on warning", 1},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLintExitStatus$")
		cmd.Env = append(os.Environ(), "LINT_TEST_MAIN=1", "LINT_TEST_ARGS="+tc.args)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.want {
			t.Errorf("lint %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.want, stdout.String(), stderr.String())
		}
		if tc.want == 1 && !strings.Contains(stderr.String(), "Error: lint: ") {
			t.Errorf("lint %s: stderr %q", tc.args, stderr.String())
		}
	}
}
