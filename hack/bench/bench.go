package main

import (
	"context"
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

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

type benchFlags struct {
	kind   benchapp.Kind
	ns     []int
	runs   int
	rest   time.Duration
	edits  int
	out    string
	render string
	// files is -files: the base name of the report's files in out
	// (default the kind's Files); filesSet says it was given.
	files    string
	filesSet bool
	profile  string
	// memProfile is -mem-profile.
	memProfile string
	// shards is -shards: K ≥ 2 replicas as the shards of one ring, cold
	// only, after each operator run; 0 none.
	shards int
	// controller is -controller: the hand-written controller too, cold
	// only, after each operator run.
	controller bool
	// burst is -burst: the later phases end with a change of all N
	// objects at once.
	burst bool
	// conversion is -conversion: the conversion webhook's mode alone
	// (conversion.go).
	conversion bool
	// clients are the clients' binaries by name (limit, controller),
	// built once per run by runBench; not a flag.
	clients map[string]string
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
	fs.IntVar(&f.runs, "runs", 3, "cold runs of each client per N, interleaved limit, operator, limit, ..., each on a fresh control plane; the later phases run once, after the last")
	fs.DurationVar(&f.rest, "rest", 60*time.Second, "how long to count writes at rest")
	fs.IntVar(&f.edits, "edits", 200, "single spec changes, one at a time, for the change latency")
	fs.StringVar(&f.out, "out", "../../docs", "folder for the report's .md, .json and .png")
	fs.StringVar(&f.profile, "cpu-profile", "", "write a Go CPU profile of the operator's last cold run (cold start and rest) to this file, suffixed with N")
	fs.StringVar(&f.memProfile, "mem-profile", "", "write a Go heap profile of the operator's last cold run, as it exits after the rest, to this file, suffixed with N")
	fs.IntVar(&f.shards, "shards", 0, "also run the operator as this many replicas, the shards of one ring (run --sharding), cold only, after each operator run on a fresh control plane, and write <report>-sharded.{md,json} (0: not; at least 2)")
	fs.BoolVar(&f.burst, "burst", true, "end the later phases with a change of all N objects at once (-burst=false: not, as make bench-30k, where it alone would take a quarter of an hour a client)")
	fs.BoolVar(&f.controller, "controller", false, "also run a hand-written controller for the BenchApp (cmd/controller, built by the bench: informers, a work queue, listers; the limit's writes), cold only, after each operator run on a fresh control plane")
	fs.BoolVar(&f.conversion, "conversion", false, "measure the CRD conversion webhook instead: per N a LIST of N objects at the version the API server converts, through the operator's webhook and through conversion None (interleaved, -runs each), the render of the conversions in-process and the operator's peak RSS; writes benchmarks-conversion.{md,json}")
	fs.StringVar(&f.render, "render", "", "measure nothing: write the report into -out again from this .json (its kind and files name the files)")
	fs.StringVar(&f.files, "files", "", "the base name of the report's files in -out (default the kind's: benchmarks, benchmarks-chart), e.g. benchmarks-30k for benchmarks-30k.{md,json,png}; stored in the report, so that -render writes the same files; with -render it renames them")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	fs.Visit(func(fl *flag.Flag) { f.filesSet = f.filesSet || fl.Name == "files" })
	var err error
	if f.kind, err = benchapp.KindNamed(*kind); err != nil {
		return f, err
	}
	if !f.filesSet {
		f.files = f.kind.Files
	}
	// With -render the report's kind is the JSON's, known once read.
	if f.render == "" {
		if err := checkFiles(f.kind, f.files); err != nil {
			return f, err
		}
	}
	if f.conversion && f.filesSet {
		return f, fmt.Errorf("-files: not with -conversion, which writes %s.{md,json}", convFiles)
	}
	for s := range strings.SplitSeq(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return f, fmt.Errorf("-n: %q is not a positive number", s)
		}
		f.ns = append(f.ns, n)
	}
	if f.runs < 1 {
		return f, fmt.Errorf("-runs: %d is not a positive number", f.runs)
	}
	if f.edits < 1 {
		return f, fmt.Errorf("-edits: %d is not a positive number", f.edits)
	}
	if f.shards != 0 && f.shards < 2 {
		return f, fmt.Errorf("-shards: %d replicas are no ring; 0 (none) or at least 2", f.shards)
	}
	return f, nil
}

// runBench measures each N and writes the report.
func runBench(ctx context.Context, args []string, log io.Writer) error {
	f, err := parseBenchFlags(args)
	if err != nil {
		return err
	}
	if f.conversion {
		if f.render != "" {
			return rerenderConversion(f.render, f.out)
		}
		return runConversionBench(ctx, f, args, log)
	}
	if f.render != "" {
		files := ""
		if f.filesSet {
			files = f.files
		}
		return rerender(f.render, f.out, files)
	}
	work, err := os.MkdirTemp("", "tmplop-bench-")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	fmt.Fprintf(log, "bench: files (kubeconfigs, operator output) in %s\n", work)
	names := []string{"limit"}
	if f.controller {
		names = append(names, "controller")
	}
	if f.clients, err = buildClients(ctx, filepath.Join(work, "bin"), names...); err != nil {
		return err
	}
	rep := newReport(f, args, time.Now())
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
	k := reportKind(f.kind, rep)
	fmt.Fprintf(log, "bench: wrote %s\n", filepath.Join(f.out, k.Files+".{md,json,png}"))
	if hasSharded(rep) {
		fmt.Fprintf(log, "bench: wrote %s\n", filepath.Join(f.out, k.ShardedFiles()+".{md,json}"))
	}
	for _, r := range rep.Runs {
		if r.Error != "" {
			return fmt.Errorf("N=%d: %s", r.N, r.Error)
		}
	}
	return nil
}

// newReport is the report of a run with flags f (from args) started at
// now, without its runs yet.
func newReport(f benchFlags, args []string, now time.Time) *report {
	return &report{
		Date: now.UTC().Format(time.RFC3339),
		Settings: settings{Command: strings.Join(append([]string{"go run ."}, args...), " "), Kind: f.kind.Name, Runs: f.runs,
			RestSeconds: f.rest.Seconds(), Edits: f.edits, BenchConcurrency: createConcurrency,
			LimitWorkers: limitWorkers, OperatorArgs: strings.Join(operatorArgs(f.kind.Templates, "<service account kubeconfig>"), " "),
			Shards: f.shards, Controller: f.controller, Files: f.files},
	}
}

// benchN measures the limit and the operator -runs times each, interleaved
// limit, operator, limit, ... (with -controller and -shards: limit,
// operator, controller, shards, limit, ...), each run on a fresh minimal control plane of
// its own (the same binaries, one after the other): on one shared plane the
// second would pay for the first's objects (at N=10,000 the operator took
// 457 s after the limit's 30,000 objects, 126 s alone), and interleaving
// spreads other work on the machine over both. The last run of each goes
// on to the later phases.
func benchN(ctx context.Context, f benchFlags, n int, dir string, log io.Writer) (res runResult, m *machine, err error) {
	res = runResult{N: n, LoadBefore: loadAverage()}
	defer func() { res.LoadAfter = loadAverage() }() // after the planes have stopped
	for i := 1; i <= f.runs; i++ {
		last := i == f.runs
		fmt.Fprintf(log, "bench: N=%d: limit, run %d of %d\n", n, i, f.runs)
		load := loadAverage()
		pm, err := onPlane(ctx, f, filepath.Join(dir, fmt.Sprintf("limit-%d", i)), log, func(b *bench) error {
			s, err := b.measureLimit(ctx, n, last)
			if s != nil {
				s.LoadBefore = load
				res.Limits = append(res.Limits, s)
			}
			return err
		})
		if m == nil {
			m = pm
		}
		if err != nil {
			return res, m, fmt.Errorf("limit, run %d: %w", i, err)
		}
		fmt.Fprintf(log, "bench: N=%d: operator, run %d of %d\n", n, i, f.runs)
		load = loadAverage()
		if _, err = onPlane(ctx, f, filepath.Join(dir, fmt.Sprintf("operator-%d", i)), log, func(b *bench) error {
			s, err := b.measureOperator(ctx, n, last)
			if s != nil {
				s.LoadBefore = load
				res.Operators = append(res.Operators, s)
			}
			return err
		}); err != nil {
			return res, m, fmt.Errorf("operator, run %d: %w", i, err)
		}
		if f.controller {
			fmt.Fprintf(log, "bench: N=%d: hand-written controller, run %d of %d\n", n, i, f.runs)
			load = loadAverage()
			if _, err = onPlane(ctx, f, filepath.Join(dir, fmt.Sprintf("controller-%d", i)), log, func(b *bench) error {
				s, err := b.measureController(ctx, n)
				if s != nil {
					s.LoadBefore = load
					res.Controllers = append(res.Controllers, s)
				}
				return err
			}); err != nil {
				return res, m, fmt.Errorf("hand-written controller, run %d: %w", i, err)
			}
		}
		if f.shards < 2 {
			continue
		}
		fmt.Fprintf(log, "bench: N=%d: %d shards, run %d of %d\n", n, f.shards, i, f.runs)
		load = loadAverage()
		if _, err = onPlane(ctx, f, filepath.Join(dir, fmt.Sprintf("shards-%d", i)), log, func(b *bench) error {
			s, err := b.measureSharded(ctx, n, f.shards)
			if s != nil {
				s.LoadBefore = load
				res.Sharded = append(res.Sharded, s)
			}
			return err
		}); err != nil {
			return res, m, fmt.Errorf("%d shards, run %d: %w", f.shards, i, err)
		}
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
	if fi, err := os.Stat(bin); err == nil {
		m.OperatorBinaryBytes = fi.Size()
	}
	if fi, err := os.Stat(f.clients["limit"]); err == nil {
		m.LimitBinaryBytes = fi.Size()
	}
	if fi, err := os.Stat(f.clients["controller"]); err == nil {
		m.ControllerBinaryBytes = fi.Size()
	}
	if m.OperatorVersionRSSBytes, err = peakRSSAtExit(bin, "version"); err != nil {
		b.logf("%v", err) // the report goes without it
	}
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

// rerender writes the report of an earlier run again, from its JSON, under
// the files name it holds or, if files is not empty, under files (which
// the report then holds); from a <files>-sharded.json the sharded report
// only.
func rerender(path, out, files string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	rep, err := decodeReport(data)
	if err != nil {
		return fmt.Errorf("render: decode %s: %w", path, err)
	}
	base, err := benchapp.KindNamed(rep.Settings.Kind)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	// The sharded report's JSON is the whole run's: rendered, it writes
	// the sharded report alone, not over the main one.
	sharded := filepath.Base(path) == reportKind(base, rep).ShardedFiles()+".json"
	if files != "" {
		rep.Settings.Files = files
	}
	if err := checkFiles(base, reportKind(base, rep).Files); err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	if sharded {
		return writeShardedReport(out, rep)
	}
	return writeReport(out, rep)
}
