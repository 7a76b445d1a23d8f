package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// limitWorkers is how many objects the limit serves at once.
const limitWorkers = 10

// limitNamespace holds the limit's BenchApps, opNamespace the operator's.
const (
	limitNamespace = "limit"
	opNamespace    = "op"
)

// limitProc is the limit, or the hand-written controller, running as a
// child process.
type limitProc struct {
	name  string // limit or controller
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startClient re-executes this binary as `bench <sub>` (limit or
// controller) on the limit's namespace, with extra flags.
func (b *bench) startClient(sub string, extra ...string) (*limitProc, time.Time, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("start %s: %w", sub, err)
	}
	args := append([]string{sub, "-kubeconfig", b.kubeconfig, "-namespace", limitNamespace,
		"-workers", strconv.Itoa(limitWorkers), "-kind", b.flags.kind.name}, extra...)
	cmd := exec.Command(self, args...)
	// Killed with the bench; its errors go to a file beside the operator's output.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := os.Create(filepath.Join(b.dir, sub+".log"))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("start %s: %w", sub, err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("start %s: %w", sub, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("start %s: %w", sub, err)
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, time.Time{}, fmt.Errorf("start %s: %w", sub, err)
	}
	return &limitProc{name: sub, cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}, started, nil
}

// report reads the client's report of its cold pass.
func (p *limitProc) report() (limitReport, error) {
	var rep limitReport
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		return rep, fmt.Errorf("read the %s's report (see %s.log): %w", p.name, p.name, err)
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		return rep, fmt.Errorf("read the %s's report %q: %w", p.name, line, err)
	}
	return rep, nil
}

// follow lets the limit start watching for changes.
func (p *limitProc) follow() error {
	if _, err := io.WriteString(p.stdin, "follow\n"); err != nil {
		return fmt.Errorf("tell the limit to follow: %w", err)
	}
	return nil
}

// stop ends the limit, politely first.
func (p *limitProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// measureLimit creates N BenchApps in the limit's namespace and measures
// the limit on them: cold, then, if later, the changes.
func (b *bench) measureLimit(ctx context.Context, n int, later bool) (*subject, error) {
	s, p, tr, err := b.measureCold(ctx, n, "limit", "-follow="+strconv.FormatBool(later))
	if tr != nil {
		defer tr.stop()
	}
	if p != nil {
		defer p.stop()
	}
	if err != nil || !later {
		return s, err
	}
	if err := p.follow(); err != nil {
		return s, err
	}
	// The limit's watch starts from its LIST and first passes over its
	// own status writes: let it, before timing changes.
	time.Sleep(followSettle)
	if s.Edits, err = b.measureEdits(ctx, tr, limitNamespace, n); err != nil {
		return s, err
	}
	if s.Burst, err = b.measureBurst(ctx, tr, limitNamespace, n); err != nil {
		return s, err
	}
	return s, nil
}

// measureController creates N BenchApps in the limit's namespace and
// measures the hand-written controller on them, cold only.
func (b *bench) measureController(ctx context.Context, n int) (*subject, error) {
	s, p, tr, err := b.measureCold(ctx, n, "controller")
	if p != nil {
		p.stop()
	}
	if tr != nil {
		tr.stop()
	}
	return s, err
}

// measureCold creates N BenchApps in the limit's namespace, starts `bench
// sub` (the limit or the controller) on them and measures its cold pass.
// The caller stops the client and the tracker (each nil if it did not
// start), which go on for the later phases.
func (b *bench) measureCold(ctx context.Context, n int, sub string, extra ...string) (*subject, *limitProc, *tracker, error) {
	if err := createBenchApps(ctx, b.cs, b.dyn, limitNamespace, n); err != nil {
		return nil, nil, nil, err
	}
	tr, err := startTracker(ctx, b.dyn, limitNamespace)
	if err != nil {
		return nil, nil, nil, err
	}
	tr.goal(-1)
	mk, err := b.mark(ctx)
	if err != nil {
		return nil, nil, tr, err
	}
	p, started, err := b.startClient(sub, extra...)
	if err != nil {
		return nil, nil, tr, err
	}
	rep, err := p.report()
	if err != nil {
		return nil, p, tr, err
	}
	wctx, cancel := context.WithTimeout(ctx, convergeTimeout(n))
	first, last, err := tr.waitAll(wctx, n)
	cancel()
	if err != nil {
		return nil, p, tr, fmt.Errorf("cold: %w", err)
	}
	s := &subject{ColdSeconds: last.Sub(started).Seconds(), FirstSeconds: first.Sub(started).Seconds(), PeakRSSBytes: rep.PeakRSSBytes,
		RSSAnonBytes: rep.RSSAnonBytes, RSSFileBytes: rep.RSSFileBytes, ColdCPUSeconds: rep.CPUSeconds}
	if s.Cold, err = b.since(ctx, mk); err != nil {
		return s, p, tr, err
	}
	b.logf("%s: cold %.2fs (own count %.2fs), first %.3fs, %d requests, CPU %.2fs, peak RSS %d MiB",
		sub, s.ColdSeconds, rep.Seconds, s.FirstSeconds, s.Cold.Measured, s.ColdCPUSeconds, s.PeakRSSBytes>>20)
	return s, p, tr, nil
}

// followSettle is how long the limit gets to open its watch.
const followSettle = 2 * time.Second

// convergeTimeout bounds a wait for N objects to converge.
func convergeTimeout(n int) time.Duration {
	return 5*time.Minute + time.Duration(n)*100*time.Millisecond
}
