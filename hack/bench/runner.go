package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmplop/operator/test/harness"
)

// runner lets the bench, a program, use harness.StartOperator, which is
// written for tests: it is the part of testing.TB that StartOperator uses.
// Any other method would panic on the nil embedded TB, which is the point:
// a harness change that needs more shows at once.
type runner struct {
	testing.TB
	dir      string
	cleanups []func()
	n        int
}

// fatal is how Fatalf leaves StartOperator; startOperator recovers it.
type fatal struct{ msg string }

func (r *runner) Helper()      {}
func (r *runner) Failed() bool { return false }
func (r *runner) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}
func (r *runner) Fatalf(format string, args ...any) { panic(fatal{fmt.Sprintf(format, args...)}) }
func (r *runner) Cleanup(f func())                  { r.cleanups = append(r.cleanups, f) }

// TempDir gives each operator a folder of its own for its output, kept
// after the run for reading.
func (r *runner) TempDir() string {
	r.n++
	dir := filepath.Join(r.dir, fmt.Sprintf("operator-%d", r.n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(fatal{fmt.Sprintf("make %s: %v", dir, err)})
	}
	return dir
}

// lastDir is the folder TempDir gave last: the last operator's.
func (r *runner) lastDir() string { return filepath.Join(r.dir, fmt.Sprintf("operator-%d", r.n)) }

// close runs the cleanups, last first: it kills an operator still running.
func (r *runner) close() {
	for _, f := range slices.Backward(r.cleanups) {
		f()
	}
	r.cleanups = nil
}

// startOperator starts the operator binary, the harness way (own process
// group, output in a file, killed with the bench), and the time it started.
func (r *runner) startOperator(bin string, args ...string) (op *harness.Operator, started time.Time, err error) {
	defer func() {
		if v := recover(); v != nil {
			f, ok := v.(fatal)
			if !ok {
				panic(v)
			}
			err = fmt.Errorf("start operator: %s", f.msg)
		}
	}()
	started = time.Now()
	return harness.StartOperator(r, bin, args...), started, nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
