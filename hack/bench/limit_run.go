package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

// limitWorkers is how many objects the limit serves at once.
const limitWorkers = 10

// limitNamespace holds the limit's BenchApps, opNamespace the operator's.
const (
	limitNamespace = "limit"
	opNamespace    = "op"
)

// limitProc is the limit, or the hand-written controller, running as a
// child process: a binary of its own (cmd/limit, cmd/controller), so that
// its peak RSS holds its own code's file pages, not the bench's.
type limitProc struct {
	name  string // limit or controller
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startClient starts the client sub (limit or controller), built by
// buildClients, on the limit's namespace, with extra flags.
func (b *bench) startClient(sub string, extra ...string) (*limitProc, time.Time, error) {
	bin := b.flags.clients[sub]
	if bin == "" {
		return nil, time.Time{}, fmt.Errorf("start %s: not built", sub)
	}
	args := append([]string{"-kubeconfig", b.kubeconfig, "-namespace", limitNamespace,
		"-workers", strconv.Itoa(limitWorkers), "-kind", b.flags.kind.Name}, extra...)
	cmd := exec.Command(bin, args...)
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
func (p *limitProc) report() (benchapp.Report, error) {
	var rep benchapp.Report
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

// measureCold creates N BenchApps in the limit's namespace, starts sub
// (the limit or the controller) on them and measures its cold pass.
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

// clientPackages are the clients' main packages in the bench's module.
var clientPackages = map[string]string{"limit": "./cmd/limit", "controller": "./cmd/controller"}

// buildClients builds the clients named into dir and returns their paths
// by name. They are built as harness.BuildOperator builds the operator
// binary (go build, no -race, -trimpath or -ldflags; GOFLAGS from the
// environment as for it), so that the binaries compare like for like: a
// client's resident file pages are its own code's, as the operator's are.
func buildClients(ctx context.Context, dir string, names ...string) (map[string]string, error) {
	module, err := benchModule()
	if err != nil {
		return nil, fmt.Errorf("build clients: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("build clients: %w", err)
	}
	bins := map[string]string{}
	for _, name := range names {
		pkg, ok := clientPackages[name]
		if !ok {
			return nil, fmt.Errorf("build clients: no client %q", name)
		}
		path := filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", path, pkg)
		cmd.Dir = module
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s: go build %s in %s: %w\n%s", name, pkg, module, err, out)
		}
		bins[name] = path
	}
	return bins, nil
}

// benchModule is the bench's module folder, hack/bench of the repository
// above the working directory (as test/cluster finds the repository).
func benchModule() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod := filepath.Join(dir, "hack", "bench")
		if _, err := os.Stat(filepath.Join(mod, "go.mod")); err == nil {
			return mod, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("hack/bench/go.mod not found above the working directory")
		}
		dir = parent
	}
}
