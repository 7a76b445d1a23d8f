package main

import (
	"strings"
	"testing"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

func TestSummaryTable(t *testing.T) {
	cold := func(sec, cpu float64, rss, anon, file int64) *subject {
		return &subject{ColdSeconds: sec, FirstSeconds: 0.1, ColdCPUSeconds: cpu, PeakRSSBytes: rss << 20,
			RSSAnonBytes: anon << 20, RSSFileBytes: file << 20, Cold: &phase{Measured: 3010, Writes: 3002}}
	}
	folder := &report{Settings: settings{Runs: 3}, Runs: []runResult{{
		N:         1000,
		Limits:    []*subject{cold(10, 2.0, 40, 8, 30), cold(11, 2.2, 40, 8, 30), cold(12, 2.4, 41, 9, 30)},
		Operators: []*subject{cold(10.4, 2.3, 47, 14, 33), cold(10.5, 2.6, 47, 14, 33), cold(10.6, 2.7, 48, 15, 33)},
	}}}
	chart := &report{Settings: settings{Runs: 1, Kind: "chart"}, Runs: []runResult{{
		N:         10000,
		Limits:    []*subject{cold(100, 20, 80, 50, 30)},
		Operators: []*subject{cold(120, 30, 200, 160, 35)},
	}}}
	dir := t.TempDir()
	if err := writeReport(dir, chart); err != nil {
		t.Fatal(err)
	}
	md := string(markdown(folder, benchapp.Kinds[0], nil, mustSiblings(t, dir)...))
	for _, want := range []string{
		// The medians: 10.5 / 11 s is within 1.05×, 2.6 / 2.2 s of CPU is 1.18×, 47 MiB under 48.
		"| [folder](benchmarks.md) | 1000 | 3 | 10.50 / 11.00 | ✅ 0.95× | 2.60 / 2.20 | ✅ 1.18× | ✅ 47.0 / 40.0 | 33.0 | 14680 / 8389 | ✅ 3.010 |",
		"| [chart](benchmarks-chart.md) | 10000 | 1 | 120.00 / 100.00 | ❌ 1.20× | 30.00 / 20.00 | ❌ 1.50× | ❌ 200.0 / 80.0 | 35.0 | 16777 / 5243 | ✅ 0.301 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the summary has no line %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "[folder]") > strings.Index(md, "[chart]") {
		t.Errorf("the chart's row comes before the folder's:\n%s", md)
	}
}

func mustSiblings(t *testing.T, dir string) []*report {
	t.Helper()
	reps, err := siblingReports(dir, benchapp.Kinds[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 {
		t.Fatalf("%d sibling reports in %s, want the chart's", len(reps), dir)
	}
	return reps
}
