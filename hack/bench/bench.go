package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

type benchFlags struct {
	kind    benchKind
	ns      []int
	rest    time.Duration
	edits   int
	out     string
	render  string
	profile string
}

// bench is one N's run: its control plane, its clients and where it keeps
// its files.
type bench struct {
	flags      benchFlags
	log        io.Writer
	root       string // the repository
	bin        string // the operator binary
	dir        string // this N's files (kubeconfig, operator output)
	kubeconfig string // of the measured identity
	cs         kubernetes.Interface
	dyn        dynamic.Interface
	own        *requestCounter
}

func parseBenchFlags(args []string) (benchFlags, error) {
	f := benchFlags{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	ns := fs.String("n", "1000,10000", "comma-separated numbers of objects, each on a fresh control plane")
	kind := fs.String("kind", "folder", "the BenchApp served by a folder of templates (hack/bench/templates) or by a Helm chart (hack/bench/charts); chart writes benchmarks-chart.{md,json,png}")
	fs.DurationVar(&f.rest, "rest", 60*time.Second, "how long to count writes at rest")
	fs.IntVar(&f.edits, "edits", 200, "single spec changes, one at a time, for the change latency")
	fs.StringVar(&f.out, "out", "../../docs", "folder for the report's .md, .json and .png")
	fs.StringVar(&f.profile, "cpu-profile", "", "write a Go CPU profile of the operator's first run (cold start and rest) to this file, suffixed with N")
	fs.StringVar(&f.render, "render", "", "measure nothing: write the report into -out again from this .json (its kind names the files)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	var err error
	if f.kind, err = kindNamed(*kind); err != nil {
		return f, err
	}
	for s := range strings.SplitSeq(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return f, fmt.Errorf("-n: %q is not a positive number", s)
		}
		f.ns = append(f.ns, n)
	}
	if f.edits < 1 {
		return f, fmt.Errorf("-edits: %d is not a positive number", f.edits)
	}
	return f, nil
}

// runBench measures each N and writes the report.
func runBench(ctx context.Context, args []string, log io.Writer) error {
	f, err := parseBenchFlags(args)
	if err != nil {
		return err
	}
	if f.render != "" {
		return rerender(f.render, f.out)
	}
	work, err := os.MkdirTemp("", "tmplop-bench-")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	fmt.Fprintf(log, "bench: files (kubeconfigs, operator output) in %s\n", work)
	rep := &report{
		Date: time.Now().UTC().Format(time.RFC3339),
		Settings: settings{Command: strings.Join(append([]string{"go run ."}, args...), " "), Kind: f.kind.name,
			RestSeconds: f.rest.Seconds(), Edits: f.edits, BenchConcurrency: createConcurrency,
			LimitWorkers: limitWorkers, OperatorArgs: strings.Join(operatorArgs(f.kind.templates, "<service account kubeconfig>"), " ")},
	}
	for _, n := range f.ns {
		fmt.Fprintf(log, "bench: N=%d\n", n)
		res, m, err := benchN(ctx, f, n, filepath.Join(work, fmt.Sprintf("n%d", n)), log)
		if m != nil {
			rep.Machine = *m
		}
		if err != nil {
			res.Error = err.Error()
			fmt.Fprintf(log, "bench: N=%d: %v\n", n, err)
		}
		rep.Runs = append(rep.Runs, res)
		if ctx.Err() != nil {
			break
		}
	}
	if err := writeReport(f.out, rep); err != nil {
		return err
	}
	fmt.Fprintf(log, "bench: wrote %s\n", filepath.Join(f.out, f.kind.files+".{md,json,png}"))
	for _, r := range rep.Runs {
		if r.Error != "" {
			return fmt.Errorf("N=%d: %s", r.N, r.Error)
		}
	}
	return nil
}

// benchN measures the limit, then the operator, each on a fresh minimal
// control plane of its own (the same binaries, one after the other). On one
// shared plane the second would pay for the first's objects: at N=10,000
// the operator took 457 s after the limit's 30,000 objects, 126 s alone.
func benchN(ctx context.Context, f benchFlags, n int, dir string, log io.Writer) (res runResult, m *machine, err error) {
	res = runResult{N: n, LoadBefore: loadAverage()}
	defer func() { res.LoadAfter = loadAverage() }() // after the planes have stopped
	fmt.Fprintf(log, "bench: N=%d: limit\n", n)
	m, err = onPlane(ctx, f, filepath.Join(dir, "limit"), log, func(b *bench) (err error) {
		res.Limit, err = b.measureLimit(ctx, n)
		return err
	})
	if err != nil {
		return res, m, fmt.Errorf("limit: %w", err)
	}
	fmt.Fprintf(log, "bench: N=%d: operator\n", n)
	if _, err = onPlane(ctx, f, filepath.Join(dir, "operator"), log, func(b *bench) (err error) {
		res.Operator, err = b.measureOperator(ctx, n)
		return err
	}); err != nil {
		return res, m, fmt.Errorf("operator: %w", err)
	}
	return res, m, nil
}

// onPlane starts a fresh minimal control plane with the bench's identity
// and CRD, runs measure on it, and stops it.
func onPlane(ctx context.Context, f benchFlags, dir string, log io.Writer, measure func(b *bench) error) (*machine, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	plane, err := cluster.StartWith(cluster.Options{Minimal: true})
	if err != nil {
		return nil, fmt.Errorf("start a minimal control plane: %w", err)
	}
	defer plane.Stop()
	bin, err := harness.BuildOperator(plane.RepoRoot())
	if err != nil {
		return nil, err
	}
	b := &bench{flags: f, log: log, root: plane.RepoRoot(), bin: bin, dir: dir, own: &requestCounter{}}
	admin := rest.CopyConfig(plane.Config)
	// The bench is an admin (exempt from APF) without a client-side rate
	// limit; its requests are counted to be told apart.
	admin.QPS, admin.UserAgent = -1, "bench"
	admin.Wrap(b.own.wrap)
	if b.cs, err = kubernetes.NewForConfig(admin); err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	if b.dyn, err = dynamic.NewForConfig(admin); err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	v, err := b.cs.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("kubernetes version: %w", err)
	}
	m := describeMachine(v.GitVersion)
	if b.kubeconfig, err = createIdentity(ctx, admin, b.cs, dir); err != nil {
		return &m, err
	}
	if err := installCRD(ctx, b.dyn, filepath.Join(b.root, "hack", "bench", "crd.yaml")); err != nil {
		return &m, err
	}
	return &m, measure(b)
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}

// rerender writes the report of an earlier run again, from its JSON.
func rerender(path, out string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	rep := &report{}
	if err := json.Unmarshal(data, rep); err != nil {
		return fmt.Errorf("render: decode %s: %w", path, err)
	}
	return writeReport(out, rep)
}
