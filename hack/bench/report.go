package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// writeReport writes the report of rep's kind into dir: benchmarks.md,
// .json and .png for the folder, benchmarks-chart.* for the chart.
func writeReport(dir string, rep *report) error {
	k, err := kindNamed(rep.Settings.Kind)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	base := filepath.Join(dir, k.files)
	if err := os.WriteFile(base+".json", append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.WriteFile(base+".md", markdown(rep, k), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return writePlot(base+".png", rep)
}

// The goals of the performance issue.
const (
	goalConvergeRatio = 1.1
	goalRequests      = 3.1
	goalFirst         = 0.5 // seconds
	goalP99           = 1.0 // seconds, at N=1,000
)

// goalRSS is the peak RSS goal at N, if there is one.
func goalRSS(n int) (int64, bool) {
	switch n {
	case 1000:
		return 60 << 20, true
	case 10000:
		return 256 << 20, true
	}
	return 0, false
}

func markdown(rep *report, k benchKind) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	date := rep.Date
	if t, err := time.Parse(time.RFC3339, rep.Date); err == nil {
		date = t.Format("2006-01-02 15:04 MST")
	}
	m := rep.Machine
	if k.chart == nil {
		w("# Benchmarks\n\n")
	} else {
		w("# Benchmarks: a Helm chart served as a kind\n\n")
	}
	w("The operator against **the limit**, a minimal client that sends exactly the requests the work needs, ")
	by := "hack/bench (`make bench`)"
	if k.chart != nil {
		by = "hack/bench"
	}
	w("on the same control plane (the same binaries, a fresh instance for each) in the same run. Written by %s on %s; raw figures in ", by, date)
	w("[%[1]s.json](%[1]s.json), convergence and memory against N in [%[1]s.png](%[1]s.png).\n\n", k.files)
	if k.chart != nil {
		w("The kind is **a Helm chart served as a kind** ([docs/helm.md](helm.md)): the BenchApp is served by the chart [%[1]s](../%[1]s) ", k.dir())
		w("(%s %s; each BenchApp a release, its spec the values), which renders the same Deployment and Service as the folder of templates ", k.chart["name"], k.chart["version"])
		w("that [benchmarks.md](benchmarks.md) measures; its status is the engine's conditions, observedGeneration and `status.chart`, ")
		w("without status.yaml's fields. The limit writes the same.\n\n")
	}
	w("Run: `%s` in hack/bench.\n\n", rep.Settings.Command)
	w("## Machine\n\n")
	w("- %d cores", m.Cores)
	if m.CPU != "" {
		w(" (%s)", m.CPU)
	}
	w(", %.1f GiB of memory; %s.\n", float64(m.MemoryBytes)/(1<<30), m.Go)
	w("- Kubernetes %s, %s. A fresh control plane for each N and each of the two clients: on one shared plane the second pays for the first's objects (at N=10,000 the operator took 457 s after the limit, 126 s alone).\n", m.Kubernetes, m.Plane)
	w("- Both clients authenticate as the service account `%s/%s` (bound to cluster-admin) with a token from the ", systemNamespace, serviceAccount)
	w("TokenRequest API, so APF puts them in priority level `%s`, as an operator in a cluster; the bench itself is an exempt admin.\n\n", priorityLevel)
	w("## What is measured\n\n")
	w("- **The limit** (`bench limit`, a child process): one LIST of the BenchApps, then, %d objects at a time, ", rep.Settings.LimitWorkers)
	w("a server-side apply of the Deployment and of the Service the operator would apply (same fields, labels, annotations ")
	w("with the engine's hash, owner reference; field manager `limit`; a test compares them with `operator render`) and of the ")
	w("same status through the status subresource: 3 requests per object and one. ")
	w("No client-side rate limit. For the changes it watches the BenchApps and applies the Deployment and the status of each changed one.\n")
	w("- **The operator**: `operator %s`, its defaults otherwise.\n", rep.Settings.OperatorArgs)
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
	w("- **Memory**: peak RSS is the kernel's VmHWM of the process (the operator's after its cold start and %s at rest; ", seconds(rep.Settings.RestSeconds))
	w("the limit's after its cold pass). Heap in use is from the operator's `Caught up` log line.\n")
	w("- **At rest**: writes over %s after convergence. **Restart**: SIGTERM, wait for the exit, start again; ", seconds(rep.Settings.RestSeconds))
	w("writes from the signal until %s after the new process logged `Caught up`.\n\n", restartSettle)
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
	w("Load average (1 min) of the machine: %.2f before, %.2f after. The limit runs first, then the operator, each on a fresh plane: ", r.LoadBefore, r.LoadAfter)
	w("other work on the machine in between moves their ratio.\n\n")
	op, lim := r.Operator, r.Limit
	if op == nil || lim == nil {
		if op == nil && lim == nil {
			return
		}
	}
	if op == nil {
		op = &subject{}
	}
	if lim == nil {
		lim = &subject{}
	}
	n := float64(r.N)
	w("| figure | goal | operator | limit | ratio |\n|---|---|---|---|---|\n")
	ratioRow := func(name, goal string, o, l float64, ok bool, have bool, format string) {
		if !have {
			w("| %s | %s | — | — | |\n", name, goal)
			return
		}
		w("| %s | %s | %s | %s | %s |\n", name, verdict(goal, ok), fmt.Sprintf(format, o), fmt.Sprintf(format, l), ratio(o, l))
	}
	ratioRow("cold convergence, all N objects (s)", fmt.Sprintf("≤ %.1f× limit", goalConvergeRatio),
		op.ColdSeconds, lim.ColdSeconds, lim.ColdSeconds > 0 && op.ColdSeconds <= goalConvergeRatio*lim.ColdSeconds, op.Cold != nil && lim.Cold != nil, "%.2f")
	ratioRow("first object converged (s after start)", fmt.Sprintf("≤ %.1f s", goalFirst),
		op.FirstSeconds, lim.FirstSeconds, op.FirstSeconds <= goalFirst, op.Cold != nil && lim.Cold != nil, "%.3f")
	if op.Cold != nil && lim.Cold != nil {
		o, l := float64(op.Cold.Measured)/n, float64(lim.Cold.Measured)/n
		ratioRow("requests per object, cold (reads included)", fmt.Sprintf("≤ %.1f", goalRequests), o, l, o <= goalRequests, true, "%.3f")
		ow, lw := float64(op.Cold.Writes)/n, float64(lim.Cold.Writes)/n
		ratioRow("… of which writes", "", ow, lw, true, true, "%.3f")
	}
	if op.Rest != nil {
		w("| writes at rest over %s | %s | %d | — | |\n", seconds(set.RestSeconds), verdict("0", op.Rest.Writes == 0), op.Rest.Writes)
	}
	if rs := op.Restart; rs != nil {
		w("| writes across a restart | %s | %d | — | |\n", verdict("0", rs.Requests.Writes == 0), rs.Requests.Writes)
		w("| requests across a restart (reads included) | | %d | — | |\n", rs.Requests.Measured)
		w("| restart: start to `Caught up` (s) | | %.2f (log: %.2f) | — | |\n", rs.CaughtUpSeconds, rs.LogSeconds)
		w("| restart: SIGTERM to exit (s), exit code | | %.3f, %d | — | |\n", rs.StopSeconds, rs.ExitCode)
	}
	if op.ColdCPUSeconds > 0 || lim.ColdCPUSeconds > 0 {
		ratioRow("CPU time of the process, cold (s)", "", op.ColdCPUSeconds, lim.ColdCPUSeconds, true, true, "%.2f")
	}
	if op.PeakRSSBytes > 0 || lim.PeakRSSBytes > 0 {
		goal, ok := goalRSS(r.N)
		g := ""
		if ok {
			g = fmt.Sprintf("≤ %d MiB", goal>>20)
		}
		ratioRow("peak RSS (MiB)", g, mib(op.PeakRSSBytes), mib(lim.PeakRSSBytes), op.PeakRSSBytes <= goal, true, "%.1f")
		ratioRow("peak RSS per object (bytes)", "", float64(op.PeakRSSBytes)/n, float64(lim.PeakRSSBytes)/n, true, true, "%.0f")
	}
	if op.PeakRSSAfterBytes > 0 {
		w("| peak RSS of the restarted operator after the changes (MiB) | | %.1f | — | |\n", mib(op.PeakRSSAfterBytes))
	}
	if op.HeapInuseBytes > 0 {
		w("| heap in use at `Caught up` (MiB; bytes per object) | | %.1f; %.0f | — | |\n", mib(op.HeapInuseBytes), float64(op.HeapInuseBytes)/n)
	}
	if op.Edits != nil && lim.Edits != nil {
		ratioRow(fmt.Sprintf("single change, p50 of %d (s)", op.Edits.Count), "", op.Edits.P50, lim.Edits.P50, true, true, "%.3f")
		g := ""
		if r.N == 1000 {
			g = fmt.Sprintf("≤ %.0f s", goalP99)
		}
		ratioRow(fmt.Sprintf("single change, p99 of %d (s)", op.Edits.Count), g, op.Edits.P99, lim.Edits.P99, op.Edits.P99 <= goalP99, true, "%.3f")
		ratioRow("single change, requests per change", "",
			float64(op.Edits.Requests.Measured)/float64(op.Edits.Count), float64(lim.Edits.Requests.Measured)/float64(lim.Edits.Count), true, true, "%.2f")
	}
	if op.Burst != nil && lim.Burst != nil {
		ratioRow("burst: all N changed at once, until all converged (s)", "", op.Burst.Seconds, lim.Burst.Seconds, true, true, "%.2f")
		ratioRow("burst: requests per object", "", float64(op.Burst.Requests.Measured)/n, float64(lim.Burst.Requests.Measured)/n, true, true, "%.3f")
	}
	w("\n")
	if op.Cold != nil && lim.Cold != nil {
		w("### Requests per object, cold, by verb and resource\n\n")
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

func seconds(s float64) string { return (time.Duration(s * float64(time.Second))).String() }

func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
