package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/tmplop/operator/hack/bench/internal/procfs"
	"github.com/tmplop/operator/test/harness"
)

// operatorArgs runs the operator with its defaults: --namespace only keeps
// it off the limit's objects, --state-namespace names the namespace its
// identity lives in. No tuning flag.
func operatorArgs(templates, kubeconfig string) []string {
	return []string{"run", "--templates", templates, "--namespace", opNamespace,
		"--kubeconfig", kubeconfig, "--state-namespace", systemNamespace}
}

const (
	// restartSettle is how long writes are still counted after the
	// restarted operator has caught up.
	restartSettle = 5 * time.Second
	// stopTimeout bounds a SIGTERM: the operator's drain timeout (20s)
	// and some.
	stopTimeout = 40 * time.Second
)

// caughtUp matches the line each kind logs once it has reconciled every
// object it found at start (engine/controller/catchup.go).
var caughtUp = regexp.MustCompile(`"Caught up".*?objects=(\d+).*?seconds=([0-9.e+-]+).*?heapInuseBytes=(\d+)`)

// parseCaughtUp reads the first "Caught up" line of an operator's output.
func parseCaughtUp(out string) (objects int, seconds float64, heap int64, err error) {
	m := caughtUp.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, 0, fmt.Errorf("no \"Caught up\" line with objects, seconds and heapInuseBytes in the operator's output")
	}
	objects, _ = strconv.Atoi(m[1])
	seconds, _ = strconv.ParseFloat(m[2], 64)
	heap, _ = strconv.ParseInt(m[3], 10, 64)
	return objects, seconds, heap, nil
}

// untilExit returns a context that ends when op exits: a wait on the
// cluster must not outlive the operator it waits for.
func untilExit(ctx context.Context, op *harness.Operator, timeout time.Duration) (context.Context, context.CancelFunc) {
	return untilAnyExit(ctx, timeout, op)
}

// untilAnyExit returns a context that ends when any of ops exits.
func untilAnyExit(ctx context.Context, timeout time.Duration, ops ...*harness.Operator) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("not within %s", timeout))
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if slices.ContainsFunc(ops, func(op *harness.Operator) bool { return !op.Alive() }) {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, cancel
}

// measureOperator creates N BenchApps in the operator's namespace and
// measures the operator on them: cold, then, if later, at rest, across a
// restart and the changes. Without later it stops the operator once cold.
func (b *bench) measureOperator(ctx context.Context, n int, later bool) (s *subject, err error) {
	if err := createBenchApps(ctx, b.cs, b.dyn, opNamespace, n); err != nil {
		return nil, err
	}
	tr, err := startTracker(ctx, b.dyn, opNamespace)
	if err != nil {
		return nil, err
	}
	defer tr.stop()
	r := &runner{dir: b.dir}
	defer r.close()
	args := operatorArgs(filepath.Join(b.root, b.flags.kind.Templates), b.kubeconfig)
	fail := func(op *harness.Operator, err error) error {
		return fmt.Errorf("%w; operator output, last lines:\n%s", err, lastLines(op.Output(), 15))
	}

	// Cold.
	tr.goal(-1)
	mk, err := b.mark(ctx)
	if err != nil {
		return nil, err
	}
	cold := args
	if b.flags.profile != "" && later {
		cold = append(slices.Clone(cold), "--cpu-profile", fmt.Sprintf("%s.%d", b.flags.profile, n))
	}
	if b.flags.memProfile != "" && later {
		cold = append(slices.Clone(cold), "--mem-profile", fmt.Sprintf("%s.%d", b.flags.memProfile, n))
	}
	op, started, err := r.startOperator(b.bin, cold...)
	if err != nil {
		return nil, err
	}
	wctx, cancel := untilExit(ctx, op, convergeTimeout(n))
	first, last, err := tr.waitAll(wctx, n)
	if err == nil {
		err = op.WaitForOutput(wctx, `"Caught up"`)
	}
	cancel()
	if err != nil {
		return nil, fail(op, fmt.Errorf("cold: %w", err))
	}
	s = &subject{ColdSeconds: last.Sub(started).Seconds(), FirstSeconds: first.Sub(started).Seconds()}
	if s.ColdCPUSeconds, err = procfs.CPUSeconds(op.PID()); err != nil {
		return s, fail(op, err)
	}
	if s.Cold, err = b.since(ctx, mk); err != nil {
		return s, err
	}
	if _, s.CaughtUpSeconds, s.HeapInuseBytes, err = parseCaughtUp(op.Output()); err != nil {
		return s, err
	}
	if s.PeakRSSBytes, err = op.PeakRSS(); err != nil {
		return s, fail(op, err)
	}
	if s.RSSAnonBytes, s.RSSFileBytes, err = procfs.RSSSplit(op.PID()); err != nil {
		return s, fail(op, err)
	}
	b.logf("operator: cold %.2fs (caught up %.2fs), first %.3fs, %d requests (%d writes), CPU %.2fs, peak RSS %d MiB, heap in use %d MiB",
		s.ColdSeconds, s.CaughtUpSeconds, s.FirstSeconds, s.Cold.Measured, s.Cold.Writes, s.ColdCPUSeconds, s.PeakRSSBytes>>20, s.HeapInuseBytes>>20)
	if !later {
		return s, stopOperator(op)
	}

	// At rest.
	if mk, err = b.mark(ctx); err != nil {
		return s, err
	}
	select {
	case <-ctx.Done():
		return s, ctx.Err()
	case <-time.After(b.flags.rest):
	}
	if s.Rest, err = b.since(ctx, mk); err != nil {
		return s, err
	}
	if s.PeakRSSRestBytes, err = op.PeakRSS(); err != nil {
		return s, fail(op, err)
	}
	b.logf("operator: at rest %s: %d requests (%d writes); peak RSS %d MiB",
		b.flags.rest, s.Rest.Measured, s.Rest.Writes, s.PeakRSSRestBytes>>20)

	// Restart.
	if s.Restart, op, err = b.measureRestart(ctx, r, op, args, n); err != nil {
		return s, err
	}

	// Changes, on the restarted operator.
	if s.Edits, err = b.measureEdits(ctx, tr, opNamespace, n); err != nil {
		return s, fail(op, err)
	}
	if s.Burst, err = b.measureBurst(ctx, tr, opNamespace, n); err != nil {
		return s, fail(op, err)
	}
	if s.PeakRSSAfterBytes, err = op.PeakRSS(); err != nil {
		return s, fail(op, err)
	}
	return s, stopOperator(op)
}

// stopOperator stops op with SIGTERM and waits for its exit.
func stopOperator(op *harness.Operator) error {
	if err := op.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	_, _, err := op.Wait(stopTimeout)
	return err
}

// measureRestart stops op with SIGTERM and starts another, counting the
// requests from the signal until restartSettle after the new one has
// caught up. It returns the new operator.
func (b *bench) measureRestart(ctx context.Context, r *runner, op *harness.Operator, args []string, n int) (*restart, *harness.Operator, error) {
	mk, err := b.mark(ctx)
	if err != nil {
		return nil, op, err
	}
	if err := op.Signal(syscall.SIGTERM); err != nil {
		return nil, op, err
	}
	code, stopped, err := op.Wait(stopTimeout)
	if err != nil {
		return nil, op, err
	}
	next, started, err := r.startOperator(b.bin, args...)
	if err != nil {
		return nil, op, err
	}
	wctx, cancel := untilExit(ctx, next, convergeTimeout(n))
	err = next.WaitForOutput(wctx, `"Caught up"`)
	cancel()
	if err != nil {
		return nil, next, fmt.Errorf("restart: %w", err)
	}
	rs := &restart{ExitCode: code, StopSeconds: stopped.Seconds(), CaughtUpSeconds: time.Since(started).Seconds()}
	if _, rs.LogSeconds, _, err = parseCaughtUp(next.Output()); err != nil {
		return rs, next, err
	}
	select {
	case <-ctx.Done():
		return rs, next, ctx.Err()
	case <-time.After(restartSettle):
	}
	if rs.Requests, err = b.since(ctx, mk); err != nil {
		return rs, next, err
	}
	b.logf("operator: restart: exit %d after %.2fs, caught up after %.2fs (log %.2fs), %d requests (%d writes)",
		code, rs.StopSeconds, rs.CaughtUpSeconds, rs.LogSeconds, rs.Requests.Measured, rs.Requests.Writes)
	return rs, next, nil
}
