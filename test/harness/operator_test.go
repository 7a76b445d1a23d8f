package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeRoot is a repository root whose cmd/operator is a small stand-in
// (see its main.go for the flags), so these tests build and run a binary
// without depending on the real operator compiling.
const fakeRoot = "testdata/fakerepo"

func fakeOperator(t *testing.T) string {
	t.Helper()
	bin, err := BuildOperator(fakeRoot)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestBuildOperator(t *testing.T) {
	first := fakeOperator(t)
	abs, err := filepath.Abs(fakeRoot)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		root    string
		wantErr string
	}{
		"same root again":          {root: fakeRoot},
		"same root, absolute path": {root: abs},
		"another root":             {root: t.TempDir(), wantErr: "already built it in"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := BuildOperator(tc.root)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("BuildOperator(%s) = %q, %v; want an error with %q", tc.root, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != first {
				t.Fatalf("BuildOperator(%s) = %q, %v; want %q, the first build", tc.root, got, err, first)
			}
			if fi, err := os.Stat(got); err != nil || fi.Mode()&0o111 == 0 {
				t.Errorf("built binary %s: %v, mode %v; want an executable", got, err, fi.Mode())
			}
		})
	}
}

func TestOperatorLifecycle(t *testing.T) {
	bin := fakeOperator(t)
	tests := map[string]struct {
		args        []string
		signal      os.Signal // nil: none
		timeout     time.Duration
		wantCode    int
		wantTimeout bool // Wait returns an error and the process lives on
		minElapsed  time.Duration
		wantOutput  string
	}{
		"graceful stop after SIGTERM": {
			args: []string{"-term-delay=300ms"}, signal: syscall.SIGTERM,
			wantCode: 0, minElapsed: 300 * time.Millisecond, wantOutput: "stopping",
		},
		"exit code after SIGTERM": {
			args: []string{"-term-exit=3"}, signal: syscall.SIGTERM, wantCode: 3,
		},
		"exits on its own": {
			args: []string{"-exit=2"}, wantCode: 2,
		},
		"killed": {
			args: []string{"-ignore-term"}, signal: syscall.SIGKILL, wantCode: -1,
		},
		"ignores SIGTERM": {
			args: []string{"-ignore-term"}, signal: syscall.SIGTERM, timeout: 300 * time.Millisecond,
			wantTimeout: true, minElapsed: 300 * time.Millisecond, wantOutput: "ignoring SIGTERM",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			op := StartOperator(t, bin, tc.args...)
			if err := op.WaitForOutput(t.Context(), "ready"); err != nil {
				t.Fatal(err)
			}
			if tc.signal != nil {
				if err := op.Signal(tc.signal); err != nil {
					t.Fatal(err)
				}
			}
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 10 * time.Second
			}
			code, elapsed, err := op.Wait(timeout)
			switch {
			case tc.wantTimeout:
				if err == nil || !op.Alive() {
					t.Errorf("Wait = %d, %v; want a timeout with the process alive (alive: %v)", code, err, op.Alive())
				}
			case err != nil:
				t.Fatalf("Wait: %v", err)
			case code != tc.wantCode:
				t.Errorf("exit code %d, want %d; output:\n%s", code, tc.wantCode, op.Output())
			case op.Alive():
				t.Errorf("Alive after Wait returned")
			}
			if elapsed < tc.minElapsed || elapsed > timeout+time.Second {
				t.Errorf("elapsed %s, want between %s and %s", elapsed, tc.minElapsed, timeout+time.Second)
			}
			if tc.wantOutput != "" {
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				if err := op.WaitForOutput(ctx, tc.wantOutput); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestOperatorCPUTime: a process that burns 500 ms of CPU before ready
// reports at least most of it, and an idle one next to nothing.
func TestOperatorCPUTime(t *testing.T) {
	bin := fakeOperator(t)
	tests := map[string]struct {
		spin     time.Duration
		min, max time.Duration
	}{
		"idle":    {spin: 0, min: 0, max: 300 * time.Millisecond},
		"spinner": {spin: 500 * time.Millisecond, min: 350 * time.Millisecond, max: 5 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			op := StartOperator(t, bin, fmt.Sprintf("-spin=%s", tc.spin))
			if err := op.WaitForOutput(t.Context(), "ready"); err != nil {
				t.Fatal(err)
			}
			cpu, err := op.CPUTime()
			if err != nil {
				t.Fatal(err)
			}
			if cpu < tc.min || cpu > tc.max {
				t.Errorf("CPUTime = %s, want between %s and %s", cpu, tc.min, tc.max)
			}
			if err := op.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if _, _, err := op.Wait(10 * time.Second); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestOperatorPeakRSS(t *testing.T) {
	bin := fakeOperator(t)
	const mib = 1 << 20
	tests := map[string]struct {
		allocMiB int
		min, max int64
	}{
		// A small Go program stays well under 64 MiB; 128 MiB touched must show.
		"idle":      {allocMiB: 0, min: 1 * mib, max: 64 * mib},
		"allocated": {allocMiB: 128, min: 128 * mib, max: 512 * mib},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			op := StartOperator(t, bin, fmt.Sprintf("-alloc=%d", tc.allocMiB))
			if err := op.WaitForOutput(t.Context(), "ready"); err != nil {
				t.Fatal(err)
			}
			rss, err := op.PeakRSS()
			if err != nil {
				t.Fatal(err)
			}
			if rss < tc.min || rss > tc.max {
				t.Errorf("PeakRSS = %d MiB, want between %d and %d MiB", rss/mib, tc.min/mib, tc.max/mib)
			}
			if err := op.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if _, _, err := op.Wait(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			if _, err := op.PeakRSS(); err == nil {
				t.Errorf("PeakRSS after exit: no error, want one")
			}
		})
	}
}

func TestWaitForOutput(t *testing.T) {
	bin := fakeOperator(t)
	tests := map[string]struct {
		args    []string
		substr  string
		timeout time.Duration
		wantErr func(error) bool // nil: found
	}{
		"found": {substr: "ready"},
		"exited before writing it": {
			args: []string{"-exit=0"}, substr: "never written",
			wantErr: func(err error) bool { return strings.Contains(err.Error(), "exited with code 0") },
		},
		"deadline": {
			substr: "never written", timeout: 300 * time.Millisecond,
			wantErr: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			op := StartOperator(t, bin, tc.args...)
			ctx := t.Context()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			err := op.WaitForOutput(ctx, tc.substr)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && (err == nil || !tc.wantErr(err)) {
				t.Errorf("WaitForOutput(%q) = %v", tc.substr, err)
			}
		})
	}
}

// cleanupTB collects the cleanups StartOperator registers and answers Failed
// as told, so the cleanup itself can be tested.
type cleanupTB struct {
	testing.TB
	failed   bool
	cleanups []func()
	logs     []string
}

func (c *cleanupTB) Cleanup(f func()) { c.cleanups = append(c.cleanups, f) }
func (c *cleanupTB) Failed() bool     { return c.failed }
func (c *cleanupTB) Logf(format string, args ...any) {
	c.logs = append(c.logs, fmt.Sprintf(format, args...))
}

func TestOperatorCleanup(t *testing.T) {
	bin := fakeOperator(t)
	tests := map[string]struct {
		failed bool
		want   []string // in the log
		absent []string
	}{
		"passed test: no output": {failed: false},
		"failed test: last 60 lines": {
			failed: true,
			want:   []string{"\nline 42\n", "\nline 100\n", "\nready"},
			absent: []string{"\nline 41\n"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tb := &cleanupTB{TB: t, failed: tc.failed}
			// It ignores SIGTERM, so only the cleanup's SIGKILL stops it.
			op := StartOperator(tb, bin, "-lines=100", "-ignore-term")
			if err := op.WaitForOutput(t.Context(), "ready"); err != nil {
				t.Fatal(err)
			}
			for i := len(tb.cleanups) - 1; i >= 0; i-- {
				tb.cleanups[i]()
			}
			if op.Alive() {
				t.Errorf("operator alive after the cleanup")
			}
			if err := syscall.Kill(op.PID(), 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("kill -0 %d after the cleanup: %v, want ESRCH", op.PID(), err)
			}
			logs := strings.Join(tb.logs, "\n")
			if !tc.failed && logs != "" {
				t.Errorf("passed test logged:\n%s", logs)
			}
			for _, s := range tc.want {
				if !strings.Contains(logs, s) {
					t.Errorf("log lacks %q:\n%s", s, logs)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(logs, s) {
					t.Errorf("log has %q, beyond the last 60 lines", s)
				}
			}
		})
	}
}

func TestTail(t *testing.T) {
	tests := map[string]struct {
		in   string
		n    int
		want string
	}{
		"empty":          {in: "", n: 3, want: ""},
		"fewer lines":    {in: "a\nb\n", n: 3, want: "a\nb"},
		"exactly n":      {in: "a\nb\nc", n: 3, want: "a\nb\nc"},
		"more than n":    {in: "a\nb\nc\nd\n", n: 2, want: "c\nd"},
		"no final break": {in: "a\nb\nc", n: 1, want: "c"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tail(tc.in, tc.n); got != tc.want {
				t.Errorf("tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		})
	}
}
