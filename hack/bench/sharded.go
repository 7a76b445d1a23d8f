package main

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/shard"
	"github.com/tmplop/operator/hack/bench/internal/benchapp"
	"github.com/tmplop/operator/hack/bench/internal/procfs"
	"github.com/tmplop/operator/test/harness"
)

// shardedRun is one cold start of the operator as -shards replicas, the
// shards of one ring, on a fresh control plane.
type shardedRun struct {
	// ColdSeconds is from the first replica's start to the last object
	// converged; FirstSeconds to the first. StartSeconds is from the
	// first replica's start to the last's.
	ColdSeconds  float64 `json:"coldSeconds"`
	FirstSeconds float64 `json:"firstSeconds"`
	StartSeconds float64 `json:"startSeconds"`
	// Cold is the requests of all the replicas together: they are one
	// service account, one measured client.
	Cold *phase `json:"cold,omitempty"`
	// LoadBefore is the machine's 1-minute load average before this run's
	// plane started.
	LoadBefore float64 `json:"loadBefore,omitempty"`
	// Unassigned is the BenchApps without a shard label once all had
	// converged (none, unless the LIST saw something the replicas did not).
	Unassigned int        `json:"unassigned"`
	Replicas   []*replica `json:"replicas"`
}

// replica is one shard of a sharded run.
type replica struct {
	ID string `json:"id"`
	// Sharder: it logged "Elected sharder".
	Sharder bool `json:"sharder,omitempty"`
	// Objects is the BenchApps labelled shard.tmplop.io/shard=ID, Children
	// the Deployments and Services labelled shard.tmplop.io/held-by=ID,
	// counted once all objects had converged.
	Objects  int `json:"objects"`
	Children int `json:"children"`
	// PeakRSSBytes is the process's VmHWM once all objects had converged;
	// RSSAnonBytes and RSSFileBytes split what was resident then.
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	RSSAnonBytes int64 `json:"rssAnonBytes,omitempty"`
	RSSFileBytes int64 `json:"rssFileBytes,omitempty"`
	// CPUSeconds is the process's CPU time (user and system) from its
	// start to the last object converged.
	CPUSeconds float64 `json:"cpuSeconds"`
	// ExitCode and StopSeconds are of the SIGTERM that ended the run, sent
	// to all replicas at once.
	ExitCode    int     `json:"exitCode"`
	StopSeconds float64 `json:"stopSeconds"`
}

// largestRSS is the replica with the greatest peak RSS (the first of
// equals), a zero one for none.
func (s *shardedRun) largestRSS() *replica {
	if len(s.Replicas) == 0 {
		return &replica{}
	}
	return slices.MaxFunc(s.Replicas, func(a, b *replica) int { return cmp.Compare(a.PeakRSSBytes, b.PeakRSSBytes) })
}

// sum is figure over the replicas.
func (s *shardedRun) sum(figure func(*replica) float64) float64 {
	var t float64
	for _, r := range s.Replicas {
		t += figure(r)
	}
	return t
}

// most is the greatest figure of a replica, 0 for none.
func (s *shardedRun) most(figure func(*replica) float64) float64 {
	var m float64
	for _, r := range s.Replicas {
		m = max(m, figure(r))
	}
	return m
}

// coldSharded are the runs whose cold start was measured.
func coldSharded(runs []*shardedRun) []*shardedRun {
	var out []*shardedRun
	for _, s := range runs {
		if s != nil && s.Cold != nil {
			out = append(out, s)
		}
	}
	return out
}

// shardID names the i-th replica's shard (from 0): s1, s2, ...
func shardID(i int) string { return fmt.Sprintf("s%d", i+1) }

// shardArgs are a replica's arguments: the operator's, and its shard of
// the ring named after the field manager (the default), its Leases in the
// bench's system namespace. The Lease durations are the defaults.
func shardArgs(args []string, id string) []string {
	return append(slices.Clone(args), "--sharding", "--shard-id", id, "--leader-election-namespace", systemNamespace)
}

// countLabel counts the label sets by their value of key; "" counts those
// without it.
func countLabel(labels []map[string]string, key string) map[string]int {
	c := map[string]int{}
	for _, l := range labels {
		c[l[key]]++
	}
	return c
}

// electedSharder reports whether an operator's output says it was elected
// the ring's sharder (cmd/operator/app/sharding.go).
func electedSharder(out string) bool { return strings.Contains(out, `"Elected sharder"`) }

// measureSharded creates N BenchApps in the operator's namespace and
// starts k replicas of the operator on them, the shards of one ring; once
// all have converged it reads each replica's memory and CPU and counts
// what each holds, then stops them all with SIGTERM.
func (b *bench) measureSharded(ctx context.Context, n, k int) (s *shardedRun, err error) {
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

	tr.goal(-1)
	mk, err := b.mark(ctx)
	if err != nil {
		return nil, err
	}
	ops := make([]*harness.Operator, 0, k)
	var started, lastStart time.Time
	for i := range k {
		op, at, err := r.startOperator(b.bin, shardArgs(args, shardID(i))...)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			started = at
		}
		lastStart = at
		ops = append(ops, op)
		b.logf("shards: %s is pid %d, its output in %s", shardID(i), op.PID(), filepath.Join(r.lastDir(), "operator.log"))
	}
	fail := func(err error) error {
		var sb strings.Builder
		for i, op := range ops {
			state := "running"
			if !op.Alive() {
				state = "exited"
			}
			fmt.Fprintf(&sb, "\n%s (pid %d, %s), last lines:\n%s", shardID(i), op.PID(), state, lastLines(op.Output(), 15))
		}
		return fmt.Errorf("%w; the replicas' output:%s", err, sb.String())
	}

	// Cold.
	wctx, cancel := untilAnyExit(ctx, convergeTimeout(n), ops...)
	first, last, err := tr.waitAll(wctx, n)
	cancel()
	if err != nil {
		return nil, fail(fmt.Errorf("cold: %w", err))
	}
	s = &shardedRun{ColdSeconds: last.Sub(started).Seconds(), FirstSeconds: first.Sub(started).Seconds(),
		StartSeconds: lastStart.Sub(started).Seconds()}
	for i, op := range ops {
		rp := &replica{ID: shardID(i)}
		if rp.CPUSeconds, err = procfs.CPUSeconds(op.PID()); err != nil {
			return s, fail(err)
		}
		if rp.PeakRSSBytes, err = op.PeakRSS(); err != nil {
			return s, fail(err)
		}
		if rp.RSSAnonBytes, rp.RSSFileBytes, err = procfs.RSSSplit(op.PID()); err != nil {
			return s, fail(err)
		}
		s.Replicas = append(s.Replicas, rp)
	}
	if s.Cold, err = b.since(ctx, mk); err != nil {
		return s, err
	}

	// What each holds, by the labels; the bench's LISTs are not the
	// replicas' requests.
	apps, err := b.listLabels(ctx, benchapp.GVR)
	if err != nil {
		return s, err
	}
	var children []map[string]string
	for _, gvr := range []schema.GroupVersionResource{benchapp.DeploymentGVR, benchapp.ServiceGVR} {
		l, err := b.listLabels(ctx, gvr)
		if err != nil {
			return s, err
		}
		children = append(children, l...)
	}
	held, heldChildren := countLabel(apps, shard.ShardLabel), countLabel(children, shard.HeldByLabel)
	s.Unassigned = held[""]
	for i, rp := range s.Replicas {
		rp.Objects, rp.Children = held[rp.ID], heldChildren[rp.ID]
		rp.Sharder = electedSharder(ops[i].Output())
	}
	for _, rp := range s.Replicas {
		b.logf("shards: %s: %d objects, %d children, peak RSS %d MiB (anonymous %d MiB), CPU %.2fs, sharder %v",
			rp.ID, rp.Objects, rp.Children, rp.PeakRSSBytes>>20, rp.RSSAnonBytes>>20, rp.CPUSeconds, rp.Sharder)
	}
	b.logf("shards: cold %.2fs, first %.3fs, %d requests (%d writes), %d unassigned",
		s.ColdSeconds, s.FirstSeconds, s.Cold.Measured, s.Cold.Writes, s.Unassigned)
	return s, b.stopReplicas(ops, s.Replicas)
}

// stopReplicas sends SIGTERM to every replica at once and waits for each
// to exit, recording its exit code and time.
func (b *bench) stopReplicas(ops []*harness.Operator, reps []*replica) error {
	for _, op := range ops {
		if err := op.Signal(syscall.SIGTERM); err != nil {
			return err
		}
	}
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Go(func() {
			code, took, err := op.Wait(stopTimeout)
			reps[i].ExitCode, reps[i].StopSeconds, errs[i] = code, took.Seconds(), err
		})
	}
	wg.Wait()
	for i, rp := range reps {
		if errs[i] != nil {
			return fmt.Errorf("stop %s: %w; last lines:\n%s", rp.ID, errs[i], lastLines(ops[i].Output(), 15))
		}
		if rp.ExitCode != 0 {
			b.logf("shards: %s exited with code %d after SIGTERM; last lines:\n%s", rp.ID, rp.ExitCode, lastLines(ops[i].Output(), 10))
		}
	}
	return nil
}

// listLabels lists a resource in the operator's namespace, 500 at a time,
// and returns each object's labels.
func (b *bench) listLabels(ctx context.Context, gvr schema.GroupVersionResource) ([]map[string]string, error) {
	var out []map[string]string
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := b.dyn.Resource(gvr).Namespace(opNamespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s in %s: %w", gvr.Resource, opNamespace, err)
		}
		for _, o := range l.Items {
			out = append(out, o.GetLabels())
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}
