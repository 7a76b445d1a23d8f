package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// tailLines is how much of a failed test's operator output is logged: enough
// for the last reconcile and its error, short enough to read in CI.
const tailLines = 60

// build is the one build of the operator per test binary: every test runs
// the same binary, and building is seconds even from a warm cache.
var build struct {
	once sync.Once
	root string
	path string
	err  error
}

// BuildOperator builds ./cmd/operator of repoRoot into a temporary folder,
// once per test binary, and returns the binary's path. Later calls return the
// first call's result, and an error when they ask for another repoRoot.
func BuildOperator(repoRoot string) (string, error) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return "", fmt.Errorf("build operator: %w", err)
	}
	build.once.Do(func() {
		build.root = root
		build.path, build.err = buildOperator(root)
	})
	if build.root != root {
		return "", fmt.Errorf("build operator in %s: this test binary already built it in %s", root, build.root)
	}
	return build.path, build.err
}

// buildOperator runs go build without -race even under go test -race: the
// operator is the system under test, and its speed and memory are what the
// tests measure.
func buildOperator(root string) (string, error) {
	dir, err := operatorDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "operator")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", path, "./cmd/operator")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("build operator: go build ./cmd/operator in %s: %w\n%s", root, err, out)
	}
	return path, nil
}

// operatorDir makes the folder for the binary. No test owns it, so nothing
// removes it when the test binary exits; instead it is named after this
// process, and folders of processes that are gone are removed here, so at
// most one binary per running test binary stays in the temp folder.
func operatorDir() (string, error) {
	const prefix = "tmplop-operator-"
	tmp := os.TempDir()
	old, _ := filepath.Glob(filepath.Join(tmp, prefix+"*"))
	for _, d := range old {
		pid, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), prefix), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 || n == os.Getpid() {
			continue
		}
		if err := syscall.Kill(n, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
	dir, err := os.MkdirTemp(tmp, prefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", fmt.Errorf("build operator: %w", err)
	}
	return dir, nil
}

// Operator is a running operator binary, started by StartOperator.
type Operator struct {
	cmd     *exec.Cmd
	outPath string
	started time.Time

	done   chan struct{} // closed once the process is reaped
	exited time.Time     // set before done is closed

	mu       sync.Mutex
	signaled time.Time // of the first Signal
}

// StartOperator starts bin with args, its output in a file under t.TempDir,
// in a process group of its own. When the test ends the group is killed if
// the process still runs, and a failed test logs the output's last lines.
func StartOperator(t testing.TB, bin string, args ...string) *Operator {
	t.Helper()
	outPath := filepath.Join(t.TempDir(), "operator.log")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatalf("start operator: %v", err)
	}
	defer out.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A group of its own, so the cleanup also reaches anything the
		// operator starts and a ^C to the test is not delivered twice.
		Setpgid: true,
		// The cleanup does not run when the test binary dies (a -timeout
		// panic); the kernel then kills the operator instead of leaving it
		// reconciling against a control plane that is being stopped. (It
		// fires when the starting thread exits; Go keeps its threads unless
		// a goroutine locked to one ends, which tests do not do.)
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start operator %s: %v", bin, err)
	}
	o := &Operator{cmd: cmd, outPath: outPath, started: time.Now(), done: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // the exit status is in cmd.ProcessState
		o.exited = time.Now()
		close(o.done)
	}()
	t.Cleanup(func() {
		if o.Alive() {
			// The group id is the pid while the leader lives, so this
			// cannot reach a stranger's group.
			_ = syscall.Kill(-o.PID(), syscall.SIGKILL)
			<-o.done
		}
		if t.Failed() {
			t.Logf("operator (pid %d) output, last %d lines:\n%s", o.PID(), tailLines, tail(o.Output(), tailLines))
		}
	})
	return o
}

// PID is the operator's process id.
func (o *Operator) PID() int { return o.cmd.Process.Pid }

// Alive reports whether the process has not exited yet.
func (o *Operator) Alive() bool {
	select {
	case <-o.done:
		return false
	default:
		return true
	}
}

// PeakRSS is the process's peak resident memory in bytes (VmHWM). The kernel
// forgets it at exit, so call it while the process runs.
func (o *Operator) PeakRSS() (int64, error) {
	if !o.Alive() {
		return 0, fmt.Errorf("peak RSS of operator (pid %d): it has exited", o.PID())
	}
	path := fmt.Sprintf("/proc/%d/status", o.PID())
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("peak RSS of operator: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("peak RSS of operator: parse %s line %q: %w", path, line, err)
		}
		return kb * 1024, nil
	}
	// A zombie's status has no memory lines.
	return 0, fmt.Errorf("peak RSS of operator: no VmHWM in %s (exiting?)", path)
}

// Resident is what the process holds resident now (not its peak), split as
// the kernel splits it: anonymous memory (heap, stacks, the runtime's:
// RssAnon), which grows with the objects, and file pages (RssFile), the
// binary's text and read-only data, shared by every process that maps the
// same file and reclaimable.
func (o *Operator) Resident() (anon, file int64, err error) {
	path := fmt.Sprintf("/proc/%d/status", o.PID())
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("resident memory of operator: %w", err)
	}
	found := 0
	for line := range strings.Lines(string(b)) {
		for key, dst := range map[string]*int64{"RssAnon:": &anon, "RssFile:": &file} {
			rest, ok := strings.CutPrefix(line, key)
			if !ok {
				continue
			}
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("resident memory of operator: parse %s line %q: %w", path, line, err)
			}
			*dst = kb * 1024
			found++
		}
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("resident memory of operator: no RssAnon and RssFile in %s (exiting?)", path)
	}
	return anon, file, nil
}

// CPUTime is the CPU the operator has used so far, user and system, from
// /proc/<pid>/stat: what a runaway render costs the machine, whatever the
// operator reports.
func (o *Operator) CPUTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", o.PID()))
	if err != nil {
		return 0, fmt.Errorf("CPU time of operator: %w", err)
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing parenthesis (proc(5): utime is field 14, stime 15).
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("CPU time of operator: unexpected /proc/%d/stat %q", o.PID(), b)
	}
	var ticks int64
	for _, field := range f[11:13] {
		n, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time of operator: %w", err)
		}
		ticks += n
	}
	// USER_HZ is 100 on every Linux this runs on (sysconf(_SC_CLK_TCK)).
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// Signal sends sig to the operator. Wait measures from the first Signal.
func (o *Operator) Signal(sig os.Signal) error {
	o.mu.Lock()
	if o.signaled.IsZero() {
		o.signaled = time.Now()
	}
	o.mu.Unlock()
	if err := o.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal operator (pid %d) %v: %w", o.PID(), sig, err)
	}
	return nil
}

// Wait waits up to timeout for the operator to exit and returns its exit code
// (-1 when a signal killed it) and the time from the first Signal, or from
// the start if none was sent, to the exit. After the timeout it returns an
// error and the process keeps running.
func (o *Operator) Wait(timeout time.Duration) (exitCode int, elapsed time.Duration, err error) {
	o.mu.Lock()
	from := o.signaled
	o.mu.Unlock()
	if from.IsZero() {
		from = o.started
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-o.done:
		return o.cmd.ProcessState.ExitCode(), o.exited.Sub(from), nil
	case <-timer.C:
		return -1, time.Since(from), fmt.Errorf("operator (pid %d) still running after %s", o.PID(), timeout)
	}
}

// Output is everything the operator wrote to stdout and stderr so far.
func (o *Operator) Output() string {
	b, err := os.ReadFile(o.outPath)
	if err != nil {
		return fmt.Sprintf("(read operator output: %v)", err)
	}
	return string(b)
}

// WaitForOutput polls the output until it contains substr. It fails early
// when the operator exits without having written it.
func (o *Operator) WaitForOutput(ctx context.Context, substr string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		// Read whether it exited before reading the output, so that output
		// written just before the exit is seen.
		exited := !o.Alive()
		if strings.Contains(o.Output(), substr) {
			return nil
		}
		if exited {
			return fmt.Errorf("operator (pid %d) exited with code %d before writing %q; last lines:\n%s",
				o.PID(), o.cmd.ProcessState.ExitCode(), substr, tail(o.Output(), 10))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %q in operator output: %w; last lines:\n%s", substr, ctx.Err(), tail(o.Output(), 10))
		case <-tick.C:
		}
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
