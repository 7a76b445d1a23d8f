package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

func TestMedian(t *testing.T) {
	for name, tc := range map[string]struct {
		values []float64
		want   float64
	}{
		"none":             {nil, 0},
		"one run":          {[]float64{7.5}, 7.5},
		"odd":              {[]float64{16.6, 17.6, 16.9}, 16.9},
		"even":             {[]float64{4, 1, 3, 2}, 2.5},
		"two":              {[]float64{14.3, 17.1}, 15.7},
		"equal":            {[]float64{3, 3, 3}, 3},
		"unsorted odd, 5":  {[]float64{9, 1, 5, 7, 3}, 5},
		"negative and one": {[]float64{-1, 1}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			in := append([]float64(nil), tc.values...)
			got := median(tc.values)
			if d := got - tc.want; d > 1e-9 || d < -1e-9 {
				t.Errorf("median(%v) = %v, want %v", tc.values, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.values[i] {
					t.Fatalf("median reordered its argument: %v, was %v", tc.values, in)
				}
			}
		})
	}
}

// A report from before -runs: one run of each client in "operator" and
// "limit".
const oldReport = `{
  "date": "2026-11-23T22:35:00Z",
  "machine": {"cores": 2, "memoryBytes": 25232932864, "kubernetes": "v1.37.2", "go": "go1.26.8", "plane": "etcd + kube-apiserver"},
  "settings": {"command": "go run . -n 1000", "restSeconds": 60, "edits": 200, "benchConcurrency": 50, "limitWorkers": 10, "operatorArgs": "run"},
  "runs": [{
    "n": 1000, "loadBefore": 1.4, "loadAfter": 0.8,
    "operator": {"coldSeconds": 7.78, "firstSeconds": 0.148, "cold": {"seconds": 7.9, "measured": 3010, "writes": 3002, "rows": []},
      "peakRSSBytes": 62283366, "coldCPUSeconds": 2.43, "heapInuseBytes": 23697817,
      "rest": {"seconds": 60, "measured": 0, "writes": 0, "rows": []}},
    "limit": {"coldSeconds": 6.73, "firstSeconds": 0.093, "cold": {"seconds": 6.8, "measured": 3001, "writes": 3000, "rows": []},
      "peakRSSBytes": 41418752, "coldCPUSeconds": 1.32}
  }]
}`

func TestRenderOldReport(t *testing.T) {
	rep, err := decodeReport([]byte(oldReport))
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Runs[0]
	if len(r.Operators) != 1 || len(r.Limits) != 1 || r.Operator != nil || r.Limit != nil || rep.Settings.Runs != 1 {
		t.Fatalf("decoded runs: %d operator, %d limit, legacy %v %v, settings.runs %d; want one of each in the slices",
			len(r.Operators), len(r.Limits), r.Operator, r.Limit, rep.Settings.Runs)
	}
	md := string(markdown(rep, benchapp.Kinds[0], nil))
	for _, want := range []string{
		"| cold convergence, all N objects (s) | ≤ 1.05× limit ❌ not met | 7.78 | 6.73 | 1.16× |",
		"| CPU time of the process, cold (s) | ≤ 1.2× limit ❌ not met | 2.43 | 1.32 | 1.84× |",
		"| writes at rest over 1m0s | 0 ✅ met | 0 | — | |",
		"### Cold start: one run",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown has no line %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Each cold run") {
		t.Errorf("one run has a table of runs:\n%s", md)
	}
	// And written again, plot included, the JSON in the new form.
	dir := t.TempDir()
	if err := writeReport(dir, rep); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "benchmarks.json"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := decodeReport(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Runs[0].Operators[0].ColdSeconds; got != 7.78 || len(again.Runs[0].Limits) != 1 {
		t.Errorf("written again and read: operator cold %v, %d limit runs", got, len(again.Runs[0].Limits))
	}
}

func TestRenderRuns(t *testing.T) {
	cold := func(sec, cpu float64, rss int64) *subject {
		return &subject{ColdSeconds: sec, FirstSeconds: 0.1, ColdCPUSeconds: cpu, PeakRSSBytes: rss << 20,
			Cold: &phase{Measured: 3000, Writes: 3000}}
	}
	rep := &report{Settings: settings{Runs: 3, RestSeconds: 60}, Runs: []runResult{{
		N:         1000,
		Limits:    []*subject{cold(16.7, 2.97, 23), cold(14.7, 2.79, 24), cold(14.5, 2.77, 22)},
		Operators: []*subject{cold(16.6, 5.13, 61), cold(16.9, 5.26, 60), cold(17.6, 5.42, 62)},
	}}}
	last := rep.Runs[0].Operators[2]
	last.Rest = &phase{}
	md := string(markdown(rep, benchapp.Kinds[0], nil))
	for _, want := range []string{
		"### Cold start: median of 3 runs (least–greatest)",
		"| cold convergence, all N objects (s) | ≤ 1.05× limit ❌ not met | 16.90 (16.60–17.60) | 14.70 (14.50–16.70) | 1.15× |",
		"| CPU time of the process, cold (s) | ≤ 1.2× limit ❌ not met | 5.26 (5.13–5.42) | 2.79 (2.77–2.97) | 1.89× |",
		"| peak RSS (MiB) | ≤ 48 MiB ❌ not met | 61.0 (60.0–62.0) | 23.0 (22.0–24.0) | 2.65× |",
		"| 2 | operator | 0.00 | 16.90 |",
		"### Later phases: one run, after the last cold run of each client",
		"| writes at rest over 1m0s | 0 ✅ met | 0 | — | |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown has no line %q:\n%s", want, md)
		}
	}
	if err := writePlot(filepath.Join(t.TempDir(), "b.png"), rep); err != nil {
		t.Fatal(err)
	}
	// Runs survive the JSON.
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	again, err := decodeReport(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Runs[0].Operators) != 3 || again.Runs[0].Operators[2].Rest == nil {
		t.Errorf("decoded %d operator runs, the last with rest %v", len(again.Runs[0].Operators), again.Runs[0].Operators[2].Rest)
	}
}

func TestPeakRSSAtExit(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary again, running no test: it starts and exits.
	peak, err := peakRSSAtExit(bin, "-test.run=^$")
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("no tracing here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak RSS %d KiB", peak>>10)
	if peak < 1<<20 || peak > 1<<30 {
		t.Errorf("peak RSS of a test binary that runs nothing: %d bytes", peak)
	}
	if _, err := peakRSSAtExit(bin, "-test.run=^$", "-no-such-flag"); err == nil {
		t.Error("a binary that fails: no error")
	}
}

// The hand-written controller's runs (-controller) get a table of their
// own beside the operator's and the limit's, and a line in the table of
// runs; a report without them has neither.
func TestRenderControllerRuns(t *testing.T) {
	cold := func(sec, cpu float64, rss int64) *subject {
		return &subject{ColdSeconds: sec, FirstSeconds: 0.1, ColdCPUSeconds: cpu, PeakRSSBytes: rss << 20,
			RSSAnonBytes: (rss - 25) << 20, RSSFileBytes: 25 << 20, Cold: &phase{Measured: 3006, Writes: 3000}}
	}
	run := runResult{
		N:         1000,
		Limits:    []*subject{cold(10, 2.0, 40), cold(11, 2.2, 41), cold(12, 2.4, 42)},
		Operators: []*subject{cold(12, 3.6, 62), cold(13, 3.9, 63), cold(14, 4.2, 64)},
	}
	for name, tc := range map[string]struct {
		controllers []*subject
		want        []string
		not         []string
	}{
		"with the controller": {
			controllers: []*subject{cold(13, 3.0, 50), cold(14, 3.25, 52), cold(15, 3.5, 54)},
			want: []string{
				"### A hand-written controller beside them: median of 3 runs (least–greatest)",
				"| CPU time of the process, cold (s) | ≤ 0.8× ❌ not met | 3.25 (3.00–3.50) | 3.90 (3.60–4.20) | 2.20 (2.00–2.40) | 1.20× | 1.48× |",
				"| peak RSS (MiB) | ≤ 0.8× ❌ not met | 52.0 (50.0–54.0) | 63.0 (62.0–64.0) | 41.0 (40.0–42.0) | 1.21× | 1.27× |",
				"| requests per object, cold (reads included) |  |",
				"| cold convergence, all N objects (s) | ≤ 1.0× ✅ met | 14.00 (13.00–15.00) | 13.00 (12.00–14.00) |",
				"| 2 | hand-written controller | 0.00 | 14.00 |",
				"- **The hand-written controller** (hack/bench/cmd/controller, a child process: a binary of its own; with `-controller`)",
			},
		},
		"without": {
			not: []string{"hand-written controller"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := run
			r.Controllers = tc.controllers
			rep := &report{Settings: settings{Runs: 3, RestSeconds: 60, Controller: tc.controllers != nil}, Runs: []runResult{r}}
			md := string(markdown(rep, benchapp.Kinds[0], nil))
			for _, want := range tc.want {
				if !strings.Contains(md, want) {
					t.Errorf("the markdown has no line %q:\n%s", want, md)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(md, not) {
					t.Errorf("the markdown has %q:\n%s", not, md)
				}
			}
		})
	}
}
