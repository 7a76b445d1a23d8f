package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

// reportKind is k with the files of rep: its -files, if it has one.
func reportKind(k benchapp.Kind, rep *report) benchapp.Kind {
	if rep.Settings.Files != "" {
		k.Files = rep.Settings.Files
	}
	return k
}

// checkFiles refuses a -files name that is not a plain file name, that
// would write over another report's files, or that the growth section
// would not find: it is k's Files or k's Files, a dash and a name.
func checkFiles(k benchapp.Kind, files string) error {
	if files == k.Files {
		return nil
	}
	if files == "" || files != filepath.Base(files) || strings.HasPrefix(files, ".") || strings.ContainsAny(files, `/\ `) {
		return fmt.Errorf("-files: %q is not a plain file name", files)
	}
	if !strings.HasPrefix(files, k.Files+"-") {
		return fmt.Errorf("-files: %q is not %s or %s-<name>: the growth section finds the %s kind's reports by that name", files, k.Files, k.Files, k.Name)
	}
	for _, suffix := range []string{"-sharded", growthSuffix} {
		if strings.HasSuffix(files, suffix) {
			return fmt.Errorf("-files: %q ends in %s, the name of another report's files", files, suffix)
		}
	}
	if otherKindFiles(k, files) {
		return fmt.Errorf("-files: %q is a name of another kind's files", files)
	}
	if files == convFiles {
		return fmt.Errorf("-files: %q is the conversion report's", files)
	}
	return nil
}

// writeReport writes the report of rep's kind into dir: benchmarks.md,
// .json and .png for the folder, benchmarks-chart.* for the chart, or
// the files -files named; the growth plot (benchmarks-growth.png) when
// the folder's reports there know two N or more; and, if it has sharded
// runs, the sharded report (benchmarks-sharded.*).
func writeReport(dir string, rep *report) error {
	base, err := benchapp.KindNamed(rep.Settings.Kind)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	k := reportKind(base, rep)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	// The figures first: nothing after can lose them.
	path := filepath.Join(dir, k.Files)
	if err := os.WriteFile(path+".json", append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	others, err := siblingReports(dir, k)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	var g *growth
	if k.Chart == nil {
		siblings, leftOut := growthSiblings(dir, base, k.Files)
		g = collectGrowth(growthSource{files: k.Files, rep: rep}, siblings, leftOut)
	}
	if err := os.WriteFile(path+".md", markdown(rep, k, g, others...), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := writePlot(path+".png", rep); err != nil {
		return err
	}
	if g != nil && len(g.rows) > 1 {
		if err := writeGrowthPlot(filepath.Join(dir, base.Files+growthSuffix+".png"), g); err != nil {
			return err
		}
	}
	if hasSharded(rep) {
		return writeShardedReport(dir, rep)
	}
	return nil
}

// The goals of the performance issues (13, then 23: "one replica, half the
// CPU").
const (
	goalConvergeRatio = 1.05
	goalCPURatio      = 1.2
	goalRequests      = 3.1
	goalFirst         = 0.5 // seconds, up to N=goalFirstN
	goalFirstN        = 1000
	goalP99           = 1.0 // seconds, at N=1,000
)

// goalRSS is the peak RSS goal at N, if there is one.
func goalRSS(n int) (int64, bool) {
	switch n {
	case 1000:
		return 48 << 20, true
	case 10000:
		return 160 << 20, true
	}
	return 0, false
}

// markdown is rep's report; g, if not nil, is the growth section's rows
// (the folder's); others are the other kinds' reports, shown beside it in
// the summary table.
func markdown(rep *report, k benchapp.Kind, g *growth, others ...*report) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	date := reportDate(rep)
	m := rep.Machine
	if k.Chart == nil {
		w("# Benchmarks\n\n")
	} else {
		w("# Benchmarks: a Helm chart served as a kind\n\n")
	}
	w("The operator against **the limit**, a minimal client that sends exactly the requests the work needs, ")
	by := "hack/bench (`make bench`)"
	if k.Chart != nil {
		by = "hack/bench"
	}
	w("on the same control plane (the same binaries, a fresh instance for each) in the same run. Written by %s on %s; raw figures in ", by, date)
	w("[%[1]s.json](%[1]s.json), convergence and memory against N in [%[1]s.png](%[1]s.png).\n\n", k.Files)
	if k.Chart != nil {
		w("The kind is **a Helm chart served as a kind** ([docs/helm.md](helm.md)): the BenchApp is served by the chart [%[1]s](../%[1]s) ", k.Dir())
		w("(%s %s; each BenchApp a release, its spec the values), which renders the same Deployment and Service as the folder of templates ", k.Chart["name"], k.Chart["version"])
		w("that [benchmarks.md](benchmarks.md) measures; its status is the engine's conditions, observedGeneration and `status.chart`, ")
		w("without status.yaml's fields. The limit writes the same.\n\n")
	}
	w("Run: `%s` in hack/bench.\n\n", rep.Settings.Command)
	if k.Chart == nil {
		// The figures are what is left after the cuts; the cuts and what
		// each bought are measured elsewhere, once, not by every run.
		w("What was cut to get these figures, and what each cut bought, measured before and after: ")
		w("[performance.md, \"What was cut, and what each cut bought\"](performance.md#what-was-cut-and-what-each-cut-bought); ")
		w("the goals not met and what stands in the way: [\"What stands in the way\"](performance.md#what-stands-in-the-way).\n\n")
	}
	all := []*report{rep}
	for _, o := range others {
		// In the order of benchapp.Kinds, the folder first.
		if o.Settings.Kind == "" || o.Settings.Kind == benchapp.Kinds[0].Name {
			all = append([]*report{o}, all...)
		} else {
			all = append(all, o)
		}
	}
	summaryTable(w, all)
	if g != nil {
		base, err := benchapp.KindNamed(rep.Settings.Kind)
		if err == nil {
			growthSection(w, g, base.Files+growthSuffix)
		}
	}
	w("## Machine\n\n")
	w("- %d cores", m.Cores)
	if m.CPU != "" {
		w(" (%s)", m.CPU)
	}
	w(", %.1f GiB of memory; %s.\n", float64(m.MemoryBytes)/(1<<30), m.Go)
	w("- Kubernetes %s, %s. A fresh control plane for each N and each run of each client: on one shared plane the second pays for the first's objects (at N=10,000 the operator took 457 s after the limit, 126 s alone).\n", m.Kubernetes, m.Plane)
	if m.OperatorVersionRSSBytes > 0 {
		w("- The operator binary itself: `operator version` alone peaks at %.1f MiB RSS", mib(m.OperatorVersionRSSBytes))
		if m.OperatorBinaryBytes > 0 {
			w(" (the binary is %.1f MiB)", mib(m.OperatorBinaryBytes))
		}
		w(": its pages and the Go runtime's start, before any work; that much of each of the operator's peak RSS below is the binary's, not the objects'.\n")
	}
	w("- Both clients authenticate as the service account `%s/%s` (bound to cluster-admin) with a token from the ", systemNamespace, serviceAccount)
	w("TokenRequest API, so APF puts them in priority level `%s`, as an operator in a cluster; the bench itself is an exempt admin.\n\n", priorityLevel)
	w("## What is measured\n\n")
	w("- **The limit** (hack/bench/cmd/limit, a child process: a binary of its own%s): one LIST of the BenchApps, then, %d objects at a time, ", binarySize(m.LimitBinaryBytes), rep.Settings.LimitWorkers)
	w("a server-side apply of the Deployment and of the Service the operator would apply (same fields, labels, annotations ")
	w("with the engine's hash, owner reference; field manager `limit`; a test compares them with `operator render`) and of the ")
	w("same status through the status subresource: 3 requests per object and one. ")
	w("No client-side rate limit. For the changes it watches the BenchApps and applies the Deployment and the status of each changed one.\n")
	w("- **The operator**: `operator %s`, its defaults otherwise.\n", rep.Settings.OperatorArgs)
	if rep.Settings.Controller {
		w("- **The hand-written controller** (hack/bench/cmd/controller, a child process: a binary of its own%s; with `-controller`): the controller one would write for ", binarySize(m.ControllerBinaryBytes))
		w("the BenchApp alone, as an expert writes one in the shape of client-go's sample-controller. Informers on the BenchApps (dynamic, ")
		w("cached as a small struct of the fields it reads) and on the Deployments and Services it labelled (typed, one shared factory, ")
		w("read as protobuf, with a server-side label selector, managedFields dropped), no resync, a typed rate-limited work queue fed ")
		w("by their events, %d workers, listers to decide, the operator's client settings (no client-side rate limit, no compression), ", rep.Settings.LimitWorkers)
		w("the Go runtime's defaults. It writes what the limit writes, with the same code, and skips a child whose hash annotation is already ")
		w("the desired one and a status of the current generation. It remembers its own writes until its informers show them, as the ")
		w("ReplicaSet controller's expectations do. Its runs are cold only, each after the operator run of the same number, on a fresh plane.\n")
	}
	w("- **Convergence**: from the process's start until every BenchApp has `status.observedGeneration == metadata.generation` ")
	w("and `Reconciled=True`, as seen by a watch of the bench's (opened before the start). For a change, also until the ")
	w("Deployment has the new replicas. %d single changes of `spec.size`, one at a time, each on another object; ", rep.Settings.Edits)
	w("the burst changes all N at once (%d patches at a time).\n", rep.Settings.BenchConcurrency)
	w("- **Requests**: kube-apiserver's `/metrics`, read before and after each phase. `apiserver_request_total` by verb and resource ")
	w("(a WATCH counts when it starts: open watches from `apiserver_longrunning_requests` are added) counts every client's requests; ")
	w("the measured client's own come from APF's `apiserver_flowcontrol_dispatched_requests_total`, through two FlowSchemas ")
	w("`%s` and `%s` that match only its service account (same priority level). ", flowSchemaWrites, flowSchemaReads)
	w("The per-verb tables count every client: the bench's requests in the phase (its patches in the change phases; its two ")
	w("watches, of the BenchApps and of the Deployments, only when they reconnect, as they are opened before the phase; ")
	w("kube-apiserver does not count its `/metrics` reads) and kube-apiserver's own (an IPAddress for each Service's ClusterIP, ")
	w("its lease renewals every 10 s, OpenAPI reads); their numbers are under each table. ")
	w("The per-object figures of the first table are the measured client's alone.\n")
	w("- **Memory**: peak RSS is the kernel's VmHWM of the process: the operator's when it has logged `Caught up` after its cold start ")
	w("(its peak after %s at rest and after the changes are one-run figures), the limit's after its cold pass. ", seconds(rep.Settings.RestSeconds))
	w("At the same moment `/proc/PID/status` splits what is resident into anonymous memory (`RssAnon`: heap, stacks, the runtime's), ")
	w("which grows with the objects, and file pages (`RssFile`: the binary's text and data, shared with every process that maps the file ")
	w("and reclaimable), which do not. Heap in use is from the operator's `Caught up` log line.\n")
	w("- **At rest**: writes over %s after convergence. **Restart**: SIGTERM, wait for the exit, start again; ", seconds(rep.Settings.RestSeconds))
	w("writes from the signal until %s after the new process logged `Caught up`.\n", restartSettle)
	runs := max(rep.Settings.Runs, 1)
	if runs > 1 {
		w("- **Runs**: for each N the cold start of each client is run %d times, interleaved limit, operator, limit, operator, ..., ", runs)
		w("each on a fresh control plane. The cold figures (convergence, first object, requests, writes, CPU time, peak RSS, heap) ")
		w("are the **median** of the %d runs, with the least and the greatest in parentheses; a ratio is of the medians, and the goals' ", runs)
		w("verdicts use the medians. The later phases (at rest, restart, single changes, burst) are **one run**: they follow the last ")
		w("cold run of each client, on its plane.\n\n")
	} else {
		w("- **Runs**: one cold run of each client for each N, the limit's first, each on a fresh control plane; the later phases follow it on its plane.\n\n")
	}
	for _, r := range rep.Runs {
		runMarkdown(w, r, rep.Settings)
	}
	return b.Bytes()
}

func runMarkdown(w func(string, ...any), r runResult, set settings) {
	w("## N = %s\n\n", thousands(int64(r.N)))
	if r.Error != "" {
		w("**The run did not complete:** `%s`\n\n", oneLine(r.Error))
	}
	w("Load average (1 min) of the machine: %.2f before, %.2f after. Other work on the machine moves the figures of a run; ", r.LoadBefore, r.LoadAfter)
	w("the runs of the two clients take turns so that it falls on both.\n\n")
	if len(r.Operators) == 0 && len(r.Limits) == 0 {
		return
	}
	n := float64(r.N)
	ops, lims := coldRuns(r.Operators), coldRuns(r.Limits)
	runs := max(len(ops), len(lims))
	if runs > 1 {
		w("### Cold start: median of %d runs (least–greatest)\n\n", runs)
	} else {
		w("### Cold start: one run\n\n")
	}
	w("| figure | goal | operator | limit | ratio |\n|---|---|---|---|---|\n")
	// coldRow is a figure over the cold runs of each client; ok is the
	// goal's verdict on the medians.
	coldRow := func(name, goal string, figure func(*subject) float64, ok func(o, l float64) bool, format string) {
		o, l := spreadOf(ops, figure), spreadOf(lims, figure)
		if goal != "" && o.Runs > 0 && l.Runs > 0 {
			goal = verdict(goal, ok(o.Median, l.Median))
		}
		w("| %s | %s | %s | %s | %s |\n", name, goal, spreadCell(o, format), spreadCell(l, format), ratioOf(o, l))
	}
	coldRow("cold convergence, all N objects (s)", fmt.Sprintf("≤ %.2f× limit", goalConvergeRatio),
		func(s *subject) float64 { return s.ColdSeconds }, func(o, l float64) bool { return l > 0 && o <= goalConvergeRatio*l }, "%.2f")
	firstGoal := ""
	if r.N <= goalFirstN {
		firstGoal = fmt.Sprintf("≤ %.1f s", goalFirst)
	}
	coldRow("first object converged (s after start)", firstGoal,
		func(s *subject) float64 { return s.FirstSeconds }, func(o, _ float64) bool { return o <= goalFirst }, "%.3f")
	coldRow("requests per object, cold (reads included)", fmt.Sprintf("≤ %.1f", goalRequests),
		func(s *subject) float64 { return float64(s.Cold.Measured) / n }, func(o, _ float64) bool { return o <= goalRequests }, "%.3f")
	coldRow("… of which writes", "", func(s *subject) float64 { return float64(s.Cold.Writes) / n }, nil, "%.3f")
	if hasFigure(ops, lims, func(s *subject) bool { return s.ColdCPUSeconds > 0 }) {
		coldRow("CPU time of the process, cold (s)", fmt.Sprintf("≤ %.1f× limit", goalCPURatio), func(s *subject) float64 { return s.ColdCPUSeconds },
			func(o, l float64) bool { return l > 0 && o <= goalCPURatio*l }, "%.2f")
	}
	if hasFigure(ops, lims, func(s *subject) bool { return s.PeakRSSBytes > 0 }) {
		goal, ok := goalRSS(r.N)
		g := ""
		if ok {
			g = fmt.Sprintf("≤ %d MiB", goal>>20)
		}
		coldRow("peak RSS (MiB)", g, func(s *subject) float64 { return mib(s.PeakRSSBytes) }, func(o, _ float64) bool { return o <= mib(goal) }, "%.1f")
		coldRow("peak RSS per object (bytes)", "", func(s *subject) float64 { return float64(s.PeakRSSBytes) / n }, nil, "%.0f")
	}
	if hasFigure(ops, lims, func(s *subject) bool { return s.RSSAnonBytes > 0 }) {
		coldRow("… resident then: anonymous (heap, stacks; MiB)", "", func(s *subject) float64 { return mib(s.RSSAnonBytes) }, nil, "%.1f")
		coldRow("… resident then: file pages (the binary's; MiB)", "", func(s *subject) float64 { return mib(s.RSSFileBytes) }, nil, "%.1f")
		coldRow("anonymous resident per object (bytes)", "", func(s *subject) float64 { return float64(s.RSSAnonBytes) / n }, nil, "%.0f")
	}
	if hasFigure(ops, nil, func(s *subject) bool { return s.HeapInuseBytes > 0 }) {
		o := spreadOf(ops, func(s *subject) float64 { return mib(s.HeapInuseBytes) })
		perObject := spreadOf(ops, func(s *subject) float64 { return float64(s.HeapInuseBytes) / n })
		w("| heap in use at `Caught up` (MiB) | | %s | — | |\n", spreadCell(o, "%.1f"))
		w("| heap in use at `Caught up` per object (bytes) | | %s | — | |\n", spreadCell(perObject, "%.0f"))
	}
	w("\n")
	controllerTable(w, n, r)
	if runs > 1 {
		runsTable(w, n, r)
	}

	op, lim := lastRun(r.Operators), lastRun(r.Limits)
	if op == nil {
		op = &subject{}
	}
	if lim == nil {
		lim = &subject{}
	}
	if op.Rest != nil || op.Restart != nil || op.Edits != nil || lim.Edits != nil {
		if runs > 1 {
			w("### Later phases: one run, after the last cold run of each client\n\n")
		} else {
			w("### Later phases\n\n")
		}
		w("| figure | goal | operator | limit | ratio |\n|---|---|---|---|---|\n")
		ratioRow := func(name, goal string, o, l float64, ok bool, format string) {
			w("| %s | %s | %s | %s | %s |\n", name, verdict(goal, ok), fmt.Sprintf(format, o), fmt.Sprintf(format, l), ratio(o, l))
		}
		if op.Rest != nil {
			w("| writes at rest over %s | %s | %d | — | |\n", seconds(set.RestSeconds), verdict("0", op.Rest.Writes == 0), op.Rest.Writes)
		}
		if op.PeakRSSRestBytes > 0 {
			w("| peak RSS after the rest (MiB) | | %.1f | — | |\n", mib(op.PeakRSSRestBytes))
		}
		if rs := op.Restart; rs != nil {
			w("| writes across a restart | %s | %d | — | |\n", verdict("0", rs.Requests.Writes == 0), rs.Requests.Writes)
			w("| requests across a restart (reads included) | | %d | — | |\n", rs.Requests.Measured)
			w("| restart: start to `Caught up` (s) | | %.2f (log: %.2f) | — | |\n", rs.CaughtUpSeconds, rs.LogSeconds)
			w("| restart: SIGTERM to exit (s), exit code | | %.3f, %d | — | |\n", rs.StopSeconds, rs.ExitCode)
		}
		if op.PeakRSSAfterBytes > 0 {
			w("| peak RSS of the restarted operator after the changes (MiB) | | %.1f | — | |\n", mib(op.PeakRSSAfterBytes))
		}
		if op.Edits != nil && lim.Edits != nil {
			ratioRow(fmt.Sprintf("single change, p50 of %d (s)", op.Edits.Count), "", op.Edits.P50, lim.Edits.P50, true, "%.3f")
			g := ""
			if r.N == 1000 {
				g = fmt.Sprintf("≤ %.0f s", goalP99)
			}
			ratioRow(fmt.Sprintf("single change, p99 of %d (s)", op.Edits.Count), g, op.Edits.P99, lim.Edits.P99, op.Edits.P99 <= goalP99, "%.3f")
			ratioRow("single change, requests per change", "",
				float64(op.Edits.Requests.Measured)/float64(op.Edits.Count), float64(lim.Edits.Requests.Measured)/float64(lim.Edits.Count), true, "%.2f")
		}
		if op.Burst != nil && lim.Burst != nil {
			ratioRow("burst: all N changed at once, until all converged (s)", "", op.Burst.Seconds, lim.Burst.Seconds, true, "%.2f")
			ratioRow("burst: requests per object", "", float64(op.Burst.Requests.Measured)/n, float64(lim.Burst.Requests.Measured)/n, true, "%.3f")
		}
		w("\n")
	}
	if op.Cold != nil && lim.Cold != nil {
		if runs > 1 {
			w("### Requests per object, cold, by verb and resource (the last cold run of each)\n\n")
		} else {
			w("### Requests per object, cold, by verb and resource\n\n")
		}
		requestTable(w, n, []string{"operator", "limit"}, []*phase{op.Cold, lim.Cold})
	}
	var extra []string
	var phases []*phase
	if op.Rest != nil {
		extra, phases = append(extra, "at rest"), append(phases, op.Rest)
	}
	if op.Restart != nil {
		extra, phases = append(extra, "restart"), append(phases, op.Restart.Requests)
	}
	if len(phases) > 0 {
		w("### Operator at rest (%s) and across the restart: requests by verb and resource\n\n", seconds(set.RestSeconds))
		requestTable(w, 1, extra, phases)
	}
}

// controllerTable sets the hand-written controller's cold runs beside the
// operator's and the limit's, if it ran (-controller).
func controllerTable(w func(string, ...any), n float64, r runResult) {
	ctl, ops, lims := coldRuns(r.Controllers), coldRuns(r.Operators), coldRuns(r.Limits)
	if len(ctl) == 0 {
		return
	}
	if len(ctl) > 1 {
		w("### A hand-written controller beside them: median of %d runs (least–greatest)\n\n", len(ctl))
	} else {
		w("### A hand-written controller beside them: one run\n\n")
	}
	w("What watching costs any controller (the controller against the limit), and what the template engine costs on top of ")
	w("a controller written for one kind (the operator against the controller). The goals are issue 36's, on the ratio of the ")
	w("medians: the operator at most as slow as the controller, and at most 0.8× its CPU and its peak RSS ")
	w("([performance.md](performance.md) says what stands in the way where one is not met).\n\n")
	w("| figure | goal, operator ÷ controller | hand-written controller | operator | limit | operator ÷ controller | controller ÷ limit |\n|---|---|---|---|---|---|---|\n")
	row := func(name string, goal float64, figure func(*subject) float64, format string) {
		c, o, l := spreadOf(ctl, figure), spreadOf(ops, figure), spreadOf(lims, figure)
		w("| %s | %s | %s | %s | %s | %s | %s |\n", name, controllerVerdict(goal, o, c), spreadCell(c, format), spreadCell(o, format), spreadCell(l, format), ratioOf(o, c), ratioOf(c, l))
	}
	row("cold convergence, all N objects (s)", goalControllerTime, func(s *subject) float64 { return s.ColdSeconds }, "%.2f")
	row("requests per object, cold (reads included)", 0, func(s *subject) float64 { return float64(s.Cold.Measured) / n }, "%.3f")
	if hasFigure(ctl, ops, func(s *subject) bool { return s.ColdCPUSeconds > 0 }) {
		row("CPU time of the process, cold (s)", goalControllerCPU, func(s *subject) float64 { return s.ColdCPUSeconds }, "%.2f")
	}
	if hasFigure(ctl, ops, func(s *subject) bool { return s.PeakRSSBytes > 0 }) {
		row("peak RSS (MiB)", goalControllerRSS, func(s *subject) float64 { return mib(s.PeakRSSBytes) }, "%.1f")
	}
	if hasFigure(ctl, ops, func(s *subject) bool { return s.RSSAnonBytes > 0 }) {
		row("… resident then: anonymous (MiB)", 0, func(s *subject) float64 { return mib(s.RSSAnonBytes) }, "%.1f")
		row("… resident then: file pages (MiB)", 0, func(s *subject) float64 { return mib(s.RSSFileBytes) }, "%.1f")
	}
	w("\n")
}

// The goals of issue 36 ("lighter than a hand-written controller"), on the
// operator's median over the hand-written controller's.
const (
	goalControllerTime = 1.0
	goalControllerCPU  = 0.8
	goalControllerRSS  = 0.8
)

// controllerVerdict is the cell of a goal on the operator's median o over
// the controller's c; empty for no goal.
func controllerVerdict(goal float64, o, c spread) string {
	if goal == 0 || o.Runs == 0 || c.Runs == 0 || c.Median == 0 {
		return ""
	}
	return verdict(fmt.Sprintf("≤ %.1f×", goal), o.Median/c.Median <= goal)
}

// runsTable lists each cold run in the order run: limit 1, operator 1,
// (hand-written controller 1,) limit 2, ...
func runsTable(w func(string, ...any), n float64, r runResult) {
	w("#### Each cold run, in the order run\n\n")
	w("The load before is the machine's 1-minute load average as the run's plane starts: it still holds the run before.\n\n")
	w("| run | client | load before | cold (s) | first (s) | requests per object | CPU (s) | peak RSS (MiB) | heap in use (MiB) |\n")
	w("|---|---|---|---|---|---|---|---|---|\n")
	for i := range max(len(r.Operators), len(r.Limits)) {
		for _, c := range []struct {
			name string
			runs []*subject
		}{{"limit", r.Limits}, {"operator", r.Operators}, {"hand-written controller", r.Controllers}} {
			if i >= len(c.runs) || c.runs[i] == nil || c.runs[i].Cold == nil {
				continue
			}
			s := c.runs[i]
			heap := "—"
			if s.HeapInuseBytes > 0 {
				heap = fmt.Sprintf("%.1f", mib(s.HeapInuseBytes))
			}
			w("| %d | %s | %.2f | %.2f | %.3f | %.3f | %.2f | %.1f | %s |\n", i+1, c.name, s.LoadBefore, s.ColdSeconds, s.FirstSeconds,
				float64(s.Cold.Measured)/n, s.ColdCPUSeconds, mib(s.PeakRSSBytes), heap)
		}
	}
	w("\n")
}

// hasFigure reports whether any run of either client has the figure.
func hasFigure(a, b []*subject, has func(*subject) bool) bool {
	return slices.ContainsFunc(a, has) || slices.ContainsFunc(b, has)
}

// spreadCell is "median (least–greatest)", the value alone for one run,
// "—" for none.
func spreadCell(s spread, format string) string {
	switch s.Runs {
	case 0:
		return "—"
	case 1:
		return fmt.Sprintf(format, s.Median)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.Median, s.Min, s.Max)
}

// ratioOf is the ratio of the medians.
func ratioOf(o, l spread) string {
	if o.Runs == 0 || l.Runs == 0 {
		return ""
	}
	return ratio(o.Median, l.Median)
}

// requestTable writes one column per phase, counts divided by n.
func requestTable(w func(string, ...any), n float64, names []string, phases []*phase) {
	keys := map[requestKey]bool{}
	var order []requestKey
	for _, p := range phases {
		for _, r := range p.Rows {
			if !keys[r.requestKey] {
				keys[r.requestKey] = true
				order = append(order, r.requestKey)
			}
		}
	}
	format := "%.3f"
	if n == 1 {
		format = "%.0f"
	}
	w("| verb resource | %s |\n|---|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	for _, k := range order {
		w("| %s |", k)
		for _, p := range phases {
			var c int64
			for _, r := range p.Rows {
				if r.requestKey == k {
					c = r.Count
				}
			}
			w(" %s |", fmt.Sprintf(format, float64(c)/n))
		}
		w("\n")
	}
	total := func(f func(*phase) int64) {
		for _, p := range phases {
			w(" %s |", fmt.Sprintf(format, float64(f(p))/n))
		}
		w("\n")
	}
	w("| **all clients** |")
	total(func(p *phase) int64 {
		var t int64
		for _, r := range p.Rows {
			t += r.Count
		}
		return t
	})
	w("| **measured client (APF)** |")
	total(func(p *phase) int64 { return p.Measured })
	w("| … of which writes |")
	total(func(p *phase) int64 { return p.Writes })
	w("\n")
	for i, p := range phases {
		var all int64
		for _, r := range p.Rows {
			all += r.Count
		}
		w("%s (%.1f s): the bench's own requests %d, kube-apiserver's own and other clients' %d, APF rejections %d.  \n",
			strings.ToUpper(names[i][:1])+names[i][1:], p.Seconds, p.Bench, all-p.Measured-p.Bench, p.Rejected)
	}
	w("\n")
}

func verdict(goal string, ok bool) string {
	if goal == "" {
		return ""
	}
	if ok {
		return goal + " ✅ met"
	}
	return goal + " ❌ not met"
}

func ratio(o, l float64) string {
	if l == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f×", o/l)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// binarySize is ", of N MiB" for a client's binary of b bytes (the
// clients link only what they use, so that their file pages in the peak
// RSS are their own code's), "" if not measured.
func binarySize(b int64) string {
	if b <= 0 {
		return ""
	}
	return fmt.Sprintf(" of %.1f MiB", mib(b))
}

func seconds(s float64) string { return (time.Duration(s * float64(time.Second))).String() }

func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
