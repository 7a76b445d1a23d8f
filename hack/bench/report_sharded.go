package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

// hasSharded reports whether any N of rep has a sharded run.
func hasSharded(rep *report) bool {
	return slices.ContainsFunc(rep.Runs, func(r runResult) bool { return len(r.Sharded) > 0 })
}

// writeShardedReport writes the sharded report of rep's kind into dir:
// benchmarks-sharded.md and .json (benchmarks-chart-sharded.* for the
// chart, <files>-sharded.* with -files). Its JSON is the whole run's, the same as the main report's.
func writeShardedReport(dir string, rep *report) error {
	base, err := benchapp.KindNamed(rep.Settings.Kind)
	if err != nil {
		return fmt.Errorf("write sharded report: %w", err)
	}
	k := reportKind(base, rep)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write sharded report: %w", err)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("write sharded report: %w", err)
	}
	path := filepath.Join(dir, k.ShardedFiles())
	if err := os.WriteFile(path+".json", append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write sharded report: %w", err)
	}
	if err := os.WriteFile(path+".md", shardedMarkdown(rep, k), 0o644); err != nil {
		return fmt.Errorf("write sharded report: %w", err)
	}
	return nil
}

// shardCount is the number of replicas of rep's sharded runs: -shards, or
// in a report without it the first run's.
func shardCount(rep *report) int {
	if rep.Settings.Shards > 0 {
		return rep.Settings.Shards
	}
	for _, r := range rep.Runs {
		for _, s := range r.Sharded {
			if s != nil && len(s.Replicas) > 0 {
				return len(s.Replicas)
			}
		}
	}
	return 0
}

// shardedMarkdown is the sharded report: for each N, the shards' cold
// figures beside one replica's and the limit's of the same run, then each
// replica's.
func shardedMarkdown(rep *report, k benchapp.Kind) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	date := rep.Date
	if t, err := time.Parse(time.RFC3339, rep.Date); err == nil {
		date = t.Format("2006-01-02 15:04 MST")
	}
	shards := shardCount(rep)
	w("# Benchmarks: the operator as %d shards\n\n", shards)
	w("The operator run as **%d replicas, the shards of one ring** (`operator run --sharding`, [sharding.md](sharding.md)), ", shards)
	w("beside **one replica** of it and **the limit**, a minimal client that sends exactly the requests the work needs: ")
	w("each on a fresh control plane (the same binaries) in the same run. ")
	if k.Chart != nil {
		w("The BenchApp is served by the chart %s, as in [%s.md](%s.md). ", k.Dir(), k.Files, k.Files)
	}
	w("Written by hack/bench on %s; raw figures of the whole run (one replica's later phases included) in [%[2]s.json](%[2]s.json).\n\n", date, k.ShardedFiles())
	w("Run: `%s` in hack/bench. It writes this report (%s.{md,json}) and the same run's report of one replica and the limit ", rep.Settings.Command, k.ShardedFiles())
	w("(%s.{md,json,png}, in the format of [%s.md](%s.md), whose figures are of another run) into -out; ", k.Files, k.Files, k.Files)
	w("`go run . -render %s.json -out DIR` writes this report alone again.\n\n", k.ShardedFiles())

	m := rep.Machine
	w("## Machine\n\n")
	w("- %d cores", m.Cores)
	if m.CPU != "" {
		w(" (%s)", m.CPU)
	}
	w(", %.1f GiB of memory; %s. The %d replicas share them with etcd and kube-apiserver.\n", float64(m.MemoryBytes)/(1<<30), m.Go, shards)
	w("- Kubernetes %s, %s.\n", m.Kubernetes, m.Plane)
	if m.OperatorVersionRSSBytes > 0 {
		w("- `operator version` alone peaks at %.1f MiB RSS: every replica's peak below holds that much before any object.\n", mib(m.OperatorVersionRSSBytes))
	}
	w("\n## What is measured\n\n")
	w("- **%d shards**: `operator %s --sharding --shard-id s<i> --leader-election-namespace %s` for i = 1 … %d, ", shards, rep.Settings.OperatorArgs, systemNamespace, shards)
	w("started one after the other once the N BenchApps exist. The ring is named after the field manager (`operator`, the default), ")
	w("its Leases in `%s`, with the default Lease durations (15 s, renewed within 10 s, retried every 2 s). ", systemNamespace)
	w("One replica is elected sharder and labels every BenchApp `shard.tmplop.io/shard=<id>`; each replica watches only its own objects ")
	w("and its own children (`shard.tmplop.io/held-by=<id>`), and reads a child live (GET) before its first apply of it.\n")
	w("- **Convergence**: as for one replica, from the first replica's start until every BenchApp has `status.observedGeneration == metadata.generation` ")
	w("and `Reconciled=True`, as seen by a watch of the bench's.\n")
	w("- **Requests**: kube-apiserver's `/metrics` before the first start and after convergence. All the replicas authenticate as the same ")
	w("service account, so the measured client's requests (APF) are theirs together, the sharder's labels and every replica's Lease renewals included.\n")
	w("- **Each replica**, once every object has converged: its peak RSS (VmHWM), what is resident then split into anonymous memory and ")
	w("file pages (`/proc/PID/status`), and its CPU time since its start. (A shard's `Caught up` line comes at its start, before the sharder ")
	w("has labelled any object for it, so it marks nothing here; one replica's figures are read at its `Caught up`, with its last object converged.) ")
	w("Objects held: a LIST of the BenchApps after the measured phase, counted by their shard label; children held: the Deployments and ")
	w("Services, by their held-by label. The sharder is the replica that logged `Elected sharder`. Then SIGTERM to all replicas at once: ")
	w("each one's time to exit and exit code.\n")
	w("- **One replica** (`operator %s`, no sharding) and **the limit**: as [%s.md](%s.md) describes them.\n", rep.Settings.OperatorArgs, k.Files, k.Files)
	if runs := max(rep.Settings.Runs, 1); runs > 1 {
		w("- **Runs**: for each N the cold start of each is run %d times, interleaved limit, one replica, %d shards, limit, ..., ", runs, shards)
		w("each on a fresh control plane. The figures are the **median** of the runs, with the least and the greatest in parentheses; a ratio is of the medians.\n\n")
	} else {
		w("- **Runs**: one cold run of each for each N, in the order limit, one replica, %d shards, each on a fresh control plane.\n\n", shards)
	}
	for _, r := range rep.Runs {
		shardedRunMarkdown(w, r, shards)
	}
	return b.Bytes()
}

func shardedRunMarkdown(w func(string, ...any), r runResult, shards int) {
	w("## N = %s\n\n", thousands(int64(r.N)))
	if r.Error != "" {
		w("**The run did not complete:** `%s`\n\n", oneLine(r.Error))
	}
	w("Load average (1 min) of the machine: %.2f before, %.2f after.\n\n", r.LoadBefore, r.LoadAfter)
	sh, ops, lims := coldSharded(r.Sharded), coldRuns(r.Operators), coldRuns(r.Limits)
	if len(sh) == 0 {
		return
	}
	n := float64(r.N)
	runs := max(len(sh), len(ops), len(lims))
	if runs > 1 {
		w("### Cold start: %d shards beside one replica and the limit, median of %d runs (least–greatest)\n\n", shards, runs)
	} else {
		w("### Cold start: %d shards beside one replica and the limit\n\n", shards)
	}
	w("| figure | %d shards | one replica | limit | shards ÷ one replica | shards ÷ limit |\n|---|---|---|---|---|---|\n", shards)
	row := func(name string, shard func(*shardedRun) float64, subj func(*subject) float64, format string) {
		s := spreadOf(sh, shard)
		var o, l spread
		if subj != nil {
			o, l = spreadOf(ops, subj), spreadOf(lims, subj)
		}
		w("| %s | %s | %s | %s | %s | %s |\n", name, spreadCell(s, format), spreadCell(o, format), spreadCell(l, format), ratioOf(s, o), ratioOf(s, l))
	}
	row("cold convergence, all N objects (s)", func(s *shardedRun) float64 { return s.ColdSeconds },
		func(s *subject) float64 { return s.ColdSeconds }, "%.2f")
	row("first object converged (s after the first start)", func(s *shardedRun) float64 { return s.FirstSeconds },
		func(s *subject) float64 { return s.FirstSeconds }, "%.3f")
	row("replicas started, first to last (s)", func(s *shardedRun) float64 { return s.StartSeconds }, nil, "%.3f")
	row("requests per object, cold (reads included)", func(s *shardedRun) float64 { return float64(s.Cold.Measured) / n },
		func(s *subject) float64 { return float64(s.Cold.Measured) / n }, "%.3f")
	row("… of which writes", func(s *shardedRun) float64 { return float64(s.Cold.Writes) / n },
		func(s *subject) float64 { return float64(s.Cold.Writes) / n }, "%.3f")
	row("CPU time, cold (s; the shards': all replicas together)", func(s *shardedRun) float64 { return s.sum(func(r *replica) float64 { return r.CPUSeconds }) },
		func(s *subject) float64 { return s.ColdCPUSeconds }, "%.2f")
	row("CPU time, cold (s; the shards': the busiest replica's)", func(s *shardedRun) float64 { return s.most(func(r *replica) float64 { return r.CPUSeconds }) },
		func(s *subject) float64 { return s.ColdCPUSeconds }, "%.2f")
	row("peak RSS (MiB; the shards': the largest replica's)", func(s *shardedRun) float64 { return mib(s.largestRSS().PeakRSSBytes) },
		func(s *subject) float64 { return mib(s.PeakRSSBytes) }, "%.1f")
	row("… resident then: anonymous (MiB; the largest replica's)", func(s *shardedRun) float64 { return mib(s.largestRSS().RSSAnonBytes) },
		func(s *subject) float64 { return mib(s.RSSAnonBytes) }, "%.1f")
	row("… resident then: file pages (MiB; the largest replica's)", func(s *shardedRun) float64 { return mib(s.largestRSS().RSSFileBytes) },
		func(s *subject) float64 { return mib(s.RSSFileBytes) }, "%.1f")
	row("peak RSS of all replicas together (MiB)", func(s *shardedRun) float64 {
		return mib(int64(s.sum(func(r *replica) float64 { return float64(r.PeakRSSBytes) })))
	},
		func(s *subject) float64 { return mib(s.PeakRSSBytes) }, "%.1f")
	w("\n")

	one := spreadOf(ops, func(s *subject) float64 { return float64(s.PeakRSSBytes) })
	w("### Each replica\n\n")
	w("Held: counted by the labels once every object had converged. The peak RSS ratio is to one replica's")
	if one.Runs > 1 {
		w(" median")
	}
	if one.Runs > 0 {
		w(" (%.1f MiB)", mib(int64(one.Median)))
	}
	w(".\n\n")
	w("| run | replica | sharder | BenchApps held | children held | peak RSS (MiB) | ÷ one replica | anonymous / file pages (MiB) | CPU (s) | SIGTERM to exit (s), exit code |\n")
	w("|---|---|---|---|---|---|---|---|---|---|\n")
	for i, s := range r.Sharded {
		if s == nil {
			continue
		}
		for _, rp := range s.Replicas {
			sharder := ""
			if rp.Sharder {
				sharder = "yes"
			}
			share := ""
			if n > 0 {
				share = fmt.Sprintf(" (%.1f%%)", 100*float64(rp.Objects)/n)
			}
			rss := ""
			if one.Runs > 0 {
				rss = ratio(float64(rp.PeakRSSBytes), one.Median)
			}
			w("| %d | %s | %s | %d%s | %d | %.1f | %s | %.1f / %.1f | %.2f | %.2f, %d |\n", i+1, rp.ID, sharder, rp.Objects, share, rp.Children,
				mib(rp.PeakRSSBytes), rss, mib(rp.RSSAnonBytes), mib(rp.RSSFileBytes), rp.CPUSeconds, rp.StopSeconds, rp.ExitCode)
		}
	}
	w("\n")
	for i, s := range r.Sharded {
		if s != nil && s.Unassigned > 0 {
			w("Run %d: %d BenchApps had no shard label at the end.  \n", i+1, s.Unassigned)
		}
	}

	names, phases := []string{fmt.Sprintf("%d shards", shards)}, []*phase{lastShardedRun(sh).Cold}
	if op := lastRun(ops); op != nil {
		names, phases = append(names, "one replica"), append(phases, op.Cold)
	}
	if lim := lastRun(lims); lim != nil {
		names, phases = append(names, "limit"), append(phases, lim.Cold)
	}
	if runs > 1 {
		w("### Requests per object, cold, by verb and resource (the last cold run of each)\n\n")
	} else {
		w("### Requests per object, cold, by verb and resource\n\n")
	}
	requestTable(w, n, names, phases)
}

// lastShardedRun is the last of runs, nil for none.
func lastShardedRun(runs []*shardedRun) *shardedRun {
	if len(runs) == 0 {
		return nil
	}
	return runs[len(runs)-1]
}
