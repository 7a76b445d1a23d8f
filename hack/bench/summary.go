package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

// siblingReports reads the reports of the other kinds that an earlier run
// wrote into dir, so that each report can show every kind in one table. A
// kind never run there is left out.
func siblingReports(dir string, self benchapp.Kind) ([]*report, error) {
	var reps []*report
	for _, k := range benchapp.Kinds {
		if k.Name == self.Name {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, k.Files+".json"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the %s report: %w", k.Name, err)
		}
		rep, err := decodeReport(data)
		if err != nil {
			return nil, fmt.Errorf("decode the %s report: %w", k.Name, err)
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

// summaryTable writes one row per kind and N of reps: the cold figures'
// medians side by side with the goals' verdicts, each kind linked to its
// own report for the spreads and the later phases.
func summaryTable(w func(string, ...any), reps []*report) {
	w("## Every kind and N: medians of the cold runs\n\n")
	w("Each row is one N of one kind's report; the runs of a row are interleaved on fresh planes, and rows of different reports were run at different times. ")
	w("Goals: time ≤ %.2f× the limit's, CPU ≤ %.1f× the limit's, peak RSS ≤ 48 MiB at N=1,000 and ≤ 160 MiB at N=10,000, ≤ %.1f requests per object.\n\n",
		goalConvergeRatio, goalCPURatio, goalRequests)
	w("| kind | N | runs | cold operator / limit (s) | time ratio | CPU operator / limit (s) | CPU ratio | peak RSS operator / limit (MiB) | of which the operator's file pages (MiB) | anonymous per object, operator / limit (bytes) | requests per object |\n")
	w("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, rep := range reps {
		base, err := benchapp.KindNamed(rep.Settings.Kind)
		if err != nil {
			continue
		}
		k := reportKind(base, rep)
		for _, r := range rep.Runs {
			ops, lims := coldRuns(r.Operators), coldRuns(r.Limits)
			if len(ops) == 0 || len(lims) == 0 {
				continue
			}
			n := float64(r.N)
			med := medianOf
			cold := func(s *subject) float64 { return s.ColdSeconds }
			cpu := func(s *subject) float64 { return s.ColdCPUSeconds }
			rss := func(s *subject) float64 { return mib(s.PeakRSSBytes) }
			oc, lc := med(ops, cold), med(lims, cold)
			ou, lu := med(ops, cpu), med(lims, cpu)
			or, lr := med(ops, rss), med(lims, rss)
			rssGoal, hasGoal := goalRSS(r.N)
			rssCell := fmt.Sprintf("%.1f / %.1f", or, lr)
			if hasGoal {
				rssCell = verdictMark(or <= mib(rssGoal)) + " " + rssCell
			}
			file, anon := "—", "—"
			if hasFigure(ops, nil, func(s *subject) bool { return s.RSSFileBytes > 0 }) {
				file = fmt.Sprintf("%.1f", med(ops, func(s *subject) float64 { return mib(s.RSSFileBytes) }))
				perObject := func(s *subject) float64 { return float64(s.RSSAnonBytes) / n }
				anon = fmt.Sprintf("%.0f / %.0f", med(ops, perObject), med(lims, perObject))
			}
			reqs := med(ops, func(s *subject) float64 { return float64(s.Cold.Measured) / n })
			w("| [%s](%s.md) | %d | %d | %.2f / %.2f | %s %s | %.2f / %.2f | %s %s | %s | %s | %s | %s %.3f |\n",
				k.Name, k.Files, r.N, len(ops), oc, lc, verdictMark(lc > 0 && oc <= goalConvergeRatio*lc), ratio(oc, lc),
				ou, lu, verdictMark(lu > 0 && ou <= goalCPURatio*lu), ratio(ou, lu), rssCell, file, anon,
				verdictMark(reqs <= goalRequests), reqs)
		}
	}
	w("\n")
}

// medianOf is the median of figure over runs, 0 for none.
func medianOf(runs []*subject, figure func(*subject) float64) float64 {
	return spreadOf(runs, figure).Median
}

// verdictMark is a goal's verdict in a table cell.
func verdictMark(ok bool) string {
	if ok {
		return "✅"
	}
	return "❌"
}
