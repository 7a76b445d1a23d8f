package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

// growthSuffix names the growth plot beside the kind's reports:
// benchmarks-growth.png.
const growthSuffix = "-growth"

// growthClients are the clients of the growth table, in its order.
var growthClients = []struct {
	name string
	runs func(runResult) []*subject
}{
	{"operator", func(r runResult) []*subject { return r.Operators }},
	{"controller", func(r runResult) []*subject { return r.Controllers }},
	{"limit", func(r runResult) []*subject { return r.Limits }},
}

// growthSource is a report the growth section reads, by the base name of
// its files.
type growthSource struct {
	files string
	rep   *report
}

// growthFigures are one client's medians over its cold runs at one N:
// totals, not per object; NaN where no run measured the figure (a report
// from before RssAnon or the CPU time was read).
type growthFigures struct {
	runs       int
	peak, anon float64 // bytes
	cpu, cold  float64 // seconds
}

// growthRow is one N, from the newest report that has it.
type growthRow struct {
	n       int
	source  growthSource
	clients []growthFigures // by growthClients
}

// growth is the rows of the growth section, by N, and what it left out.
type growth struct {
	rows []growthRow
	// superseded are the same N in older reports; leftOut the reports
	// that could not be read and the runs that did not complete.
	superseded, leftOut []string
}

// growthFiguresOf is the medians of the cold runs; a figure counts from
// the runs that measured it (> 0).
func growthFiguresOf(runs []*subject) growthFigures {
	cold := coldRuns(runs)
	measured := func(figure func(*subject) float64) float64 {
		with := slices.DeleteFunc(slices.Clone(cold), func(s *subject) bool { return figure(s) <= 0 })
		if len(with) == 0 {
			return math.NaN()
		}
		return medianOf(with, figure)
	}
	return growthFigures{
		runs: len(cold),
		peak: measured(func(s *subject) float64 { return float64(s.PeakRSSBytes) }),
		anon: measured(func(s *subject) float64 { return float64(s.RSSAnonBytes) }),
		cpu:  measured(func(s *subject) float64 { return s.ColdCPUSeconds }),
		cold: measured(func(s *subject) float64 { return s.ColdSeconds }),
	}
}

// collectGrowth is one row per N of self and others: for an N in several
// reports, the newest report's (self's on a tie), so that every report of
// the folder shows the same table. A run that did not complete is left
// out, as is an N no client has a cold run of.
func collectGrowth(self growthSource, others []growthSource, leftOut []string) *growth {
	g := &growth{leftOut: leftOut}
	byN := map[int]int{}
	for _, src := range append([]growthSource{self}, others...) {
		for _, r := range src.rep.Runs {
			if r.Error != "" {
				g.leftOut = append(g.leftOut, fmt.Sprintf("N=%s of %s.json, which did not complete", thousands(int64(r.N)), src.files))
				continue
			}
			row := growthRow{n: r.N, source: src}
			ran := false
			for _, c := range growthClients {
				f := growthFiguresOf(c.runs(r))
				row.clients = append(row.clients, f)
				ran = ran || f.runs > 0
			}
			if !ran {
				continue
			}
			i, seen := byN[r.N]
			if !seen {
				byN[r.N] = len(g.rows)
				g.rows = append(g.rows, row)
				continue
			}
			older := src
			if newer(src.rep, g.rows[i].source.rep) {
				older = g.rows[i].source
				g.rows[i] = row
			}
			g.superseded = append(g.superseded, fmt.Sprintf("N=%s of %s.json (%s)", thousands(int64(r.N)), older.files, reportDate(older.rep)))
		}
	}
	slices.SortFunc(g.rows, func(a, b growthRow) int { return a.n - b.n })
	return g
}

// newer reports whether a was written after b, by their dates.
func newer(a, b *report) bool {
	ta, errA := time.Parse(time.RFC3339, a.Date)
	tb, errB := time.Parse(time.RFC3339, b.Date)
	if errA != nil || errB != nil {
		return a.Date > b.Date
	}
	return ta.After(tb)
}

// growthSiblings reads the reports of kind k in dir, but for the one
// named self that is being written: <k's files>.json and <k's
// files>-<name>.json of that kind, not the sharded reports (the same
// run's JSON again), the conversion report's or another kind's. A file
// that cannot be read or decoded is left out and named, so that the
// report of a long run is written all the same.
func growthSiblings(dir string, k benchapp.Kind, self string) (reps []growthSource, leftOut []string) {
	names := []string{k.Files + ".json"}
	more, _ := filepath.Glob(filepath.Join(dir, k.Files+"-*.json")) // only a bad pattern fails
	for _, m := range more {
		names = append(names, filepath.Base(m))
	}
	for _, name := range names {
		files := strings.TrimSuffix(name, ".json")
		if files == self || strings.HasSuffix(files, "-sharded") || files == convFiles || files == k.Files+growthSuffix || otherKindFiles(k, files) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			leftOut = append(leftOut, fmt.Sprintf("%s, which could not be read (%v)", name, err))
			continue
		}
		rep, err := decodeReport(data)
		if err != nil {
			leftOut = append(leftOut, fmt.Sprintf("%s, which could not be decoded (%v)", name, err))
			continue
		}
		if kind, err := benchapp.KindNamed(rep.Settings.Kind); err != nil || kind.Name != k.Name {
			continue
		}
		reps = append(reps, growthSource{files: files, rep: rep})
	}
	return reps, leftOut
}

// otherKindFiles reports whether files, k's Files or one of k's
// <Files>-<name>, is another kind's: that kind's Files, or one of its
// <Files>-<name> where its Files is the longer (benchmarks-chart-30k is
// the chart's, not the folder's).
func otherKindFiles(k benchapp.Kind, files string) bool {
	return slices.ContainsFunc(benchapp.Kinds, func(o benchapp.Kind) bool {
		return o.Name != k.Name && (files == o.Files || len(o.Files) > len(k.Files) && strings.HasPrefix(files, o.Files+"-"))
	})
}

// ran is the indexes of growthClients that have a cold run in some row.
func (g *growth) ran() []int {
	var out []int
	for i := range growthClients {
		if slices.ContainsFunc(g.rows, func(r growthRow) bool { return r.clients[i].runs > 0 }) {
			out = append(out, i)
		}
	}
	return out
}

// growthStep is a client's step from one row to the next it ran in.
type growthStep struct{ client, from, to int }

// steps are each client's steps between the consecutive N it ran at (a
// client that did not run at an N steps over it), by N1, N2 and client.
func (g *growth) steps() []growthStep {
	var out []growthStep
	for _, i := range g.ran() {
		from := -1
		for j, r := range g.rows {
			if r.clients[i].runs == 0 {
				continue
			}
			if from >= 0 {
				out = append(out, growthStep{client: i, from: from, to: j})
			}
			from = j
		}
	}
	slices.SortStableFunc(out, func(a, b growthStep) int {
		if a.from != b.from {
			return a.from - b.from
		}
		return a.to - b.to
	})
	return out
}

// slope is the marginal cost per object added from n1 to n2, (c2 - c1) /
// (n2 - n1), and its ratio to the average cost per object at n1, c1 / n1;
// ok is false when either is unknown (a figure not measured, n2 ≤ n1, no
// cost at n1).
func slope(n1 int, c1 float64, n2 int, c2 float64) (marginal, times float64, ok bool) {
	if n2 <= n1 || n1 <= 0 || math.IsNaN(c1) || math.IsNaN(c2) || c1 <= 0 {
		return 0, 0, false
	}
	marginal = (c2 - c1) / float64(n2-n1)
	return marginal, marginal / (c1 / float64(n1)), true
}

// growthVerdict says how a cost grows from the ratio of slope, as the
// table shows it (two decimals): linear or better up to 1.00×.
func growthVerdict(times float64) string {
	if math.Round(times*100)/100 <= 1 {
		return "linear or better"
	}
	return "superlinear"
}

// growthSection writes the table of the per-object costs at each N and
// the slopes between consecutive N.
func growthSection(w func(string, ...any), g *growth, plotFiles string) {
	if len(g.rows) == 0 {
		return
	}
	ran := g.ran()
	names := make([]string, len(ran))
	for j, i := range ran {
		names[j] = growthClients[i].name
	}
	who := strings.Join(names, " / ")
	w("## How the cost grows with N\n\n")
	w("One row per N: the median of the cold runs of each client (the controller is the hand-written one), divided by N. ")
	w("Peak RSS holds what does not grow with N (the binary's file pages, the Go runtime's start); anonymous RSS is the heap, stacks and the runtime's, ")
	w("read at the same moment. CPU is the process's user and system time from its start to the last object converged.")
	if len(g.rows) > 1 {
		w(" Plotted in [%[1]s.png](%[1]s.png).", plotFiles)
	}
	w("\n\n")
	ctl := slices.Contains(ran, 1)
	w("| N | cold runs, %[1]s | peak RSS per object, %[1]s (bytes) | anonymous RSS per object, %[1]s (bytes) | CPU per object, %[1]s (ms) | cold convergence per object, %[1]s (ms) |", who)
	if ctl {
		w(" CPU, operator ÷ controller | peak RSS, operator ÷ controller |")
	}
	w("\n|---|---|---|---|---|---|")
	if ctl {
		w("---|---|")
	}
	w("\n")
	for _, r := range g.rows {
		n := float64(r.n)
		cells := func(figure func(growthFigures) string) string {
			var out []string
			for _, i := range ran {
				if r.clients[i].runs == 0 {
					out = append(out, "—")
					continue
				}
				out = append(out, figure(r.clients[i]))
			}
			return strings.Join(out, " / ")
		}
		perObject := func(v, scale float64, format string) string {
			if math.IsNaN(v) {
				return "—"
			}
			return fmt.Sprintf(format, v*scale/n)
		}
		w("| %s | %s | %s | %s | %s | %s |", thousands(int64(r.n)),
			cells(func(f growthFigures) string { return fmt.Sprint(f.runs) }),
			cells(func(f growthFigures) string { return perObject(f.peak, 1, "%.0f") }),
			cells(func(f growthFigures) string { return perObject(f.anon, 1, "%.0f") }),
			cells(func(f growthFigures) string { return perObject(f.cpu, 1000, "%.3f") }),
			cells(func(f growthFigures) string { return perObject(f.cold, 1000, "%.3f") }))
		if ctl {
			o, c := r.clients[0], r.clients[1]
			w(" %s | %s |", ratioKnown(o.cpu, c.cpu), ratioKnown(o.peak, c.peak))
		}
		w("\n")
	}
	w("\n")
	if len(g.rows) == 1 {
		w("One N so far (N=%s): the slope needs a report of another N in this folder (e.g. `-n 30000 -files benchmarks-30k`).\n\n", thousands(int64(g.rows[0].n)))
	} else {
		w("### The slope between consecutive N\n\n")
		w("From N1 to N2 the **marginal cost per added object** is (cost at N2 − cost at N1) ÷ (N2 − N1), of the medians above; ")
		w("it is set against the **average cost per object at N1**, cost at N1 ÷ N1. The growth is **linear or better** when the marginal cost ")
		w("is at most the average (a ratio ≤ 1.00×, to the two decimals shown), **superlinear** when more. What does not grow with N is in the ")
		w("average at N1 and not in the marginal cost, so a fixed cost plus a constant cost per object reads as linear or better; a cost that ")
		w("grows faster than N reads as superlinear once its growth outweighs the fixed part.\n\n")
		w("| N1 → N2 | client | anonymous RSS per added object (bytes) | ÷ average at N1 | CPU per added object (ms) | ÷ average at N1 |\n")
		w("|---|---|---|---|---|---|\n")
		for _, st := range g.steps() {
			a, b := g.rows[st.from], g.rows[st.to]
			ca, cb := a.clients[st.client], b.clients[st.client]
			anon, anonTimes := slopeCells(a.n, ca.anon, b.n, cb.anon, 1, "%+.0f")
			cpu, cpuTimes := slopeCells(a.n, ca.cpu, b.n, cb.cpu, 1000, "%+.4f")
			w("| %s → %s | %s | %s | %s | %s | %s |\n", thousands(int64(a.n)), thousands(int64(b.n)), growthClients[st.client].name, anon, anonTimes, cpu, cpuTimes)
		}
		w("\n")
		// The operator's last step, in words: the question the section
		// answers.
		if st, ok := g.lastStep(0); ok {
			a, b := g.rows[st.from], g.rows[st.to]
			ca, cb := a.clients[0], b.clients[0]
			w("From N=%s to N=%s the operator's anonymous RSS changes by %s", thousands(int64(a.n)), thousands(int64(b.n)), slopeWords(a.n, ca.anon, b.n, cb.anon, 1, "%+.0f bytes"))
			w(" and its CPU time by %s per added object.\n", slopeWords(a.n, ca.cpu, b.n, cb.cpu, 1000, "%+.4f ms"))
		}
		w("\n")
	}
	growthSources(w, g)
}

// lastStep is the client's step to the largest N it ran at.
func (g *growth) lastStep(client int) (growthStep, bool) {
	var last growthStep
	found := false
	for _, st := range g.steps() {
		if st.client == client && (!found || st.to > last.to) {
			last, found = st, true
		}
	}
	return last, found
}

// slopeWords is slopeCells in a sentence: "16000 bytes (0.95× the
// average per object at N1: linear or better)", "an unknown amount" if
// unknown.
func slopeWords(n1 int, c1 float64, n2 int, c2, scale float64, format string) string {
	marginal, times, ok := slope(n1, c1, n2, c2)
	if !ok {
		return "an amount not measured"
	}
	return fmt.Sprintf(format+" (%.2f× the average per object at N=%s: %s)", marginal*scale, times, thousands(int64(n1)), growthVerdict(times))
}

// slopeCells are the marginal cost per added object (times scale) and its
// ratio with the verdict, "—" when unknown.
func slopeCells(n1 int, c1 float64, n2 int, c2, scale float64, format string) (string, string) {
	marginal, times, ok := slope(n1, c1, n2, c2)
	if !ok {
		return "—", "—"
	}
	return fmt.Sprintf(format, marginal*scale), fmt.Sprintf("%.2f×: %s", times, growthVerdict(times))
}

// ratioKnown is ratio for two measured figures, "—" otherwise.
func ratioKnown(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "—"
	}
	return ratio(a, b)
}

// growthSources says which report each row is from, since rows of
// different reports were run at different times.
func growthSources(w func(string, ...any), g *growth) {
	var sources []growthSource
	ns := map[string][]string{}
	for _, r := range g.rows {
		if _, ok := ns[r.source.files]; !ok {
			sources = append(sources, r.source)
		}
		ns[r.source.files] = append(ns[r.source.files], thousands(int64(r.n)))
	}
	var parts []string
	for _, s := range sources {
		parts = append(parts, fmt.Sprintf("N=%s: [%s.json](%s.json), written %s", strings.Join(ns[s.files], ", "), s.files, s.files, reportDate(s.rep)))
	}
	w("Where the rows come from (rows of different reports were run at different times): %s.", strings.Join(parts, "; "))
	if len(g.superseded) > 0 {
		w(" Not used, as a newer report has the same N: %s.", strings.Join(g.superseded, "; "))
	}
	if len(g.leftOut) > 0 {
		w(" Left out: %s.", strings.Join(g.leftOut, "; "))
	}
	w("\n\n")
}

// reportDate is rep's date as the reports print it.
func reportDate(rep *report) string {
	if t, err := time.Parse(time.RFC3339, rep.Date); err == nil {
		return t.Format("2006-01-02 15:04 MST")
	}
	return rep.Date
}
