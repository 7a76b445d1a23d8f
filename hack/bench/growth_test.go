package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "write the golden files in testdata again")

// growthRun is one N whose clients' cold runs cost, in total, what cost
// says for N objects: anonymous RSS in bytes, CPU and wall time in
// seconds; peak RSS is the anonymous plus 20 MiB of file pages. Three runs
// each, the median in the middle.
func growthRun(n int, controller bool, cost func(client string, n float64) (anon, cpu float64)) runResult {
	runs := func(client string) []*subject {
		anon, cpu := cost(client, float64(n))
		var out []*subject
		for _, spread := range []float64{1.02, 1, 0.97} { // the median is the 1
			out = append(out, &subject{ColdSeconds: 2 * cpu * spread, ColdCPUSeconds: cpu * spread,
				PeakRSSBytes: int64(anon*spread) + 20<<20, RSSAnonBytes: int64(anon * spread), RSSFileBytes: 20 << 20,
				Cold: &phase{Measured: int64(3 * n), Writes: int64(3 * n)}})
		}
		return out
	}
	r := runResult{N: n, Operators: runs("operator"), Limits: runs("limit")}
	if controller {
		r.Controllers = runs("controller")
	}
	return r
}

// growthCost is each client's cost: the limit's linear (a fixed part and a
// constant per object), the operator's CPU superlinear (N log N), the
// controller's memory sublinear (√N).
func growthCost(client string, n float64) (anon, cpu float64) {
	switch client {
	case "operator":
		return 8<<20 + 16000*n, 0.2 + 2e-4*n*math.Log(n)
	case "controller":
		return 6<<20 + 2e6*math.Sqrt(n), 0.1 + 2e-3*n
	}
	return 4<<20 + 8000*n, 0.05 + 1.5e-3*n
}

// The growth section of the folder's reports: one row per N from the
// reports in -out (the one written, benchmarks.json and any
// benchmarks-<name>.json of the folder; not the sharded report, the
// chart's or a file that does not decode), the newest report's for an N
// in two, and the slopes between consecutive N; benchmarks-growth.png
// beside.
func TestGrowthSection(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rep any) {
		t.Helper()
		data, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The 1,000 and 10,000 of an older run, the controller at 1,000 only.
	write("benchmarks.json", &report{Date: "2026-11-27T06:23:02Z", Settings: settings{Runs: 3, Kind: "folder"},
		Runs: []runResult{growthRun(1000, true, growthCost), growthRun(10000, false, growthCost)}})
	// An older 10,000 of another report: not used.
	write("benchmarks-old.json", &report{Date: "2026-11-20T10:00:00Z", Settings: settings{Runs: 3},
		Runs: []runResult{growthRun(10000, false, func(string, float64) (float64, float64) { return 1 << 30, 1000 })}})
	// Neither the sharded report (the same run again), nor the chart's,
	// nor the conversion's.
	write("benchmarks-sharded.json", &report{Date: "2026-11-29T00:00:00Z", Settings: settings{Kind: "folder"},
		Runs: []runResult{growthRun(5000, false, growthCost)}})
	write("benchmarks-chart.json", &report{Date: "2026-11-29T00:00:00Z", Settings: settings{Kind: "chart"},
		Runs: []runResult{growthRun(2000, false, growthCost)}})
	write("benchmarks-conversion.json", map[string]any{"date": "2026-11-29T00:00:00Z", "runs": []any{map[string]any{"n": 3000}}})
	if err := os.WriteFile(filepath.Join(dir, "benchmarks-broken.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The report written: N=30,000 with the controller, and an N that did
	// not complete.
	rep := &report{Date: "2026-11-29T01:00:00Z", Settings: settings{Runs: 3, Kind: "folder", Controller: true, Files: "benchmarks-30k"},
		Runs: []runResult{growthRun(30000, true, growthCost), {N: 60000, Error: "context canceled"}}}
	if err := writeReport(dir, rep); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "benchmarks-30k.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := sectionOf(t, string(md), "## How the cost grows with N")
	golden(t, filepath.Join("testdata", "growth.md"), section)
	if _, err := os.Stat(filepath.Join(dir, "benchmarks-growth.png")); err != nil {
		t.Errorf("no growth plot: %v", err)
	}
	// benchmarks.md, rendered again from its JSON beside the others, has
	// the same section.
	if err := rerender(filepath.Join(dir, "benchmarks.json"), dir, ""); err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(filepath.Join(dir, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got := sectionOf(t, string(again), "## How the cost grows with N"); got != section {
		t.Errorf("benchmarks.md's growth section differs from benchmarks-30k.md's:\n%s\nwant\n%s", got, section)
	}
}

// The columns are those of the clients that ran: without the controller
// in any report, no controller and no operator ÷ controller; with one N,
// no slope and no plot.
func TestGrowthWithoutController(t *testing.T) {
	for name, tc := range map[string]struct {
		ns       []int
		want     []string
		not      []string
		wantPlot bool
	}{
		"two N": {
			ns: []int{1000, 10000},
			want: []string{
				"| N | cold runs, operator / limit | peak RSS per object, operator / limit (bytes) | anonymous RSS per object, operator / limit (bytes) | CPU per object, operator / limit (ms) | cold convergence per object, operator / limit (ms) |\n|---|---|---|---|---|---|\n",
				"| 1,000 → 10,000 | limit |",
			},
			not:      []string{"controller |", "÷ controller", "One N so far"},
			wantPlot: true,
		},
		"one N": {
			ns:   []int{1000},
			want: []string{"One N so far (N=1,000)"},
			not:  []string{"### The slope", "controller |", "benchmarks-growth.png"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			rep := &report{Date: "2026-11-29T01:00:00Z", Settings: settings{Runs: 3}}
			for _, n := range tc.ns {
				rep.Runs = append(rep.Runs, growthRun(n, false, growthCost))
			}
			dir := t.TempDir()
			if err := writeReport(dir, rep); err != nil {
				t.Fatal(err)
			}
			md, err := os.ReadFile(filepath.Join(dir, "benchmarks.md"))
			if err != nil {
				t.Fatal(err)
			}
			section := sectionOf(t, string(md), "## How the cost grows with N")
			for _, want := range tc.want {
				if !strings.Contains(section, want) {
					t.Errorf("the growth section has no %q:\n%s", want, section)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(section, not) {
					t.Errorf("the growth section has %q:\n%s", not, section)
				}
			}
			_, err = os.Stat(filepath.Join(dir, "benchmarks-growth.png"))
			if got := err == nil; got != tc.wantPlot {
				t.Errorf("benchmarks-growth.png written: %v, want %v", got, tc.wantPlot)
			}
		})
	}
}

// The chart's report has no growth section.
func TestGrowthFolderOnly(t *testing.T) {
	rep := &report{Date: "2026-11-29T01:00:00Z", Settings: settings{Runs: 3, Kind: "chart"},
		Runs: []runResult{growthRun(1000, false, growthCost), growthRun(10000, false, growthCost)}}
	dir := t.TempDir()
	if err := writeReport(dir, rep); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "benchmarks-chart.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(md), "How the cost grows") {
		t.Errorf("the chart's report has a growth section:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(dir, "benchmarks-growth.png")); err == nil {
		t.Error("the chart's report wrote benchmarks-growth.png")
	}
}

func TestSlope(t *testing.T) {
	nlogn := func(n float64) float64 { return n * math.Log(n) }
	for name, tc := range map[string]struct {
		n1, n2      int
		c1, c2      float64
		marginal    float64
		times       float64
		verdict     string
		unknownWant bool
	}{
		// c = 1000 N: the marginal cost is the average.
		"linear": {n1: 10000, n2: 30000, c1: 1e7, c2: 3e7, marginal: 1000, times: 1, verdict: "linear or better"},
		// c = 5e6 + 1000 N: the fixed part is in the average only.
		"affine": {n1: 10000, n2: 30000, c1: 1.5e7, c2: 3.5e7, marginal: 1000, times: 1000 / 1500.0, verdict: "linear or better"},
		// c = N²: 3,000 per added object against 1,000.
		"quadratic": {n1: 1000, n2: 2000, c1: 1e6, c2: 4e6, marginal: 3000, times: 3, verdict: "superlinear"},
		// c = N log N: slightly superlinear, and said so.
		"n log n": {n1: 10000, n2: 30000, c1: nlogn(10000), c2: nlogn(30000),
			marginal: (nlogn(30000) - nlogn(10000)) / 20000, times: (nlogn(30000) - nlogn(10000)) / 20000 / math.Log(10000), verdict: "superlinear"},
		// c = 1e5 √N: sublinear.
		"sublinear": {n1: 10000, n2: 40000, c1: 1e7, c2: 2e7, marginal: 1e7 / 30000, times: 1e7 / 30000 / 1000, verdict: "linear or better"},
		// Less memory at the larger N: better than linear.
		"shrinks":            {n1: 1000, n2: 10000, c1: 2e7, c2: 1.9e7, marginal: -1e6 / 9000, times: -1e6 / 9000 / 2e4, verdict: "linear or better"},
		"not measured at N2": {n1: 1000, n2: 10000, c1: 1e6, c2: math.NaN(), unknownWant: true},
		"not measured at N1": {n1: 1000, n2: 10000, c1: math.NaN(), c2: 1e6, unknownWant: true},
		"nothing at N1":      {n1: 1000, n2: 10000, c1: 0, c2: 1e6, unknownWant: true},
		"the same N":         {n1: 1000, n2: 1000, c1: 1e6, c2: 1e6, unknownWant: true},
	} {
		t.Run(name, func(t *testing.T) {
			marginal, times, ok := slope(tc.n1, tc.c1, tc.n2, tc.c2)
			if ok == tc.unknownWant {
				t.Fatalf("slope(%d, %v, %d, %v): known %v, want %v", tc.n1, tc.c1, tc.n2, tc.c2, ok, !tc.unknownWant)
			}
			if !ok {
				return
			}
			if math.Abs(marginal-tc.marginal) > 1e-9*math.Abs(tc.marginal) || math.Abs(times-tc.times) > 1e-9 {
				t.Errorf("slope = %v per added object, %v× the average; want %v, %v×", marginal, times, tc.marginal, tc.times)
			}
			if got := growthVerdict(times); got != tc.verdict {
				t.Errorf("verdict at %.4f× = %q, want %q", times, got, tc.verdict)
			}
		})
	}
}

// The verdict is that of the ratio as the table shows it, two decimals.
func TestGrowthVerdictAsShown(t *testing.T) {
	for _, tc := range []struct {
		times float64
		want  string
	}{
		{0.5, "linear or better"},
		{1.004, "linear or better"}, // shown 1.00×
		{1.006, "superlinear"},      // shown 1.01×
		{1.18, "superlinear"},
	} {
		if got := growthVerdict(tc.times); got != tc.want {
			t.Errorf("growthVerdict(%v) = %q, want %q", tc.times, got, tc.want)
		}
	}
}

// -files names the report's files and goes into its settings, so that
// -render writes the same files again; with -render it renames them.
func TestFilesRoundTrip(t *testing.T) {
	f, err := parseBenchFlags([]string{"-kind", "folder", "-n", "30000", "-runs", "1", "-controller", "-files", "benchmarks-30k"})
	if err != nil {
		t.Fatal(err)
	}
	rep := newReport(f, []string{"-files", "benchmarks-30k"}, time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC))
	if rep.Settings.Files != "benchmarks-30k" {
		t.Fatalf("the report's files: %q, want benchmarks-30k", rep.Settings.Files)
	}
	rep.Runs = []runResult{growthRun(30000, true, growthCost)}
	dir := t.TempDir()
	if err := writeReport(dir, rep); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"benchmarks-30k.md", "benchmarks-30k.json", "benchmarks-30k.png"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("not written: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "benchmarks.md")); err == nil {
		t.Error("benchmarks.md written too")
	}
	md, err := os.ReadFile(filepath.Join(dir, "benchmarks-30k.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "[benchmarks-30k.json](benchmarks-30k.json)") {
		t.Errorf("the report does not point at its own JSON:\n%s", md)
	}

	// Rendered again into another folder: the same files, the same text.
	out := t.TempDir()
	if err := rerender(filepath.Join(dir, "benchmarks-30k.json"), out, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "benchmarks.md")); err == nil {
		t.Error("-render of benchmarks-30k.json wrote benchmarks.md")
	}
	again, err := os.ReadFile(filepath.Join(out, "benchmarks-30k.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(md, again) {
		t.Errorf("rendered again, benchmarks-30k.md differs:\n%s\nwas\n%s", again, md)
	}

	// Renamed by -render's -files.
	renamed := t.TempDir()
	if err := runBench(t.Context(), []string{"-render", filepath.Join(dir, "benchmarks-30k.json"), "-files", "benchmarks-nov", "-out", renamed}, os.Stderr); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(renamed, "benchmarks-nov.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeReport(data); err != nil || got.Settings.Files != "benchmarks-nov" {
		t.Errorf("the renamed report's files: %+v (%v), want benchmarks-nov", got.Settings, err)
	}
	if err := runBench(t.Context(), []string{"-render", filepath.Join(dir, "benchmarks-30k.json"), "-files", "benchmarks-chart", "-out", renamed}, os.Stderr); err == nil {
		t.Error("-render -files benchmarks-chart of a folder report: no error")
	}
}

func TestParseFilesFlag(t *testing.T) {
	for name, tc := range map[string]struct {
		args    []string
		want    string
		wantErr bool
	}{
		"default":              {nil, "benchmarks", false},
		"chart's default":      {[]string{"-kind", "chart"}, "benchmarks-chart", false},
		"30k":                  {[]string{"-files", "benchmarks-30k"}, "benchmarks-30k", false},
		"the kind's own":       {[]string{"-files", "benchmarks"}, "benchmarks", false},
		"chart 30k":            {[]string{"-kind", "chart", "-files", "benchmarks-chart-30k"}, "benchmarks-chart-30k", false},
		"another name":         {[]string{"-files", "results"}, "", true},
		"a path":               {[]string{"-files", "../benchmarks-30k"}, "", true},
		"empty":                {[]string{"-files", ""}, "", true},
		"the chart's":          {[]string{"-files", "benchmarks-chart"}, "", true},
		"the chart's, renamed": {[]string{"-files", "benchmarks-chart-30k"}, "", true},
		"sharded":              {[]string{"-files", "benchmarks-30k-sharded"}, "", true},
		"the growth plot's":    {[]string{"-files", "benchmarks-growth"}, "", true},
		"the conversion's":     {[]string{"-files", "benchmarks-conversion"}, "", true},
		"with -conversion":     {[]string{"-conversion", "-files", "benchmarks-30k"}, "", true},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := parseBenchFlags(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseBenchFlags(%q): error %v, want an error: %v", tc.args, err, tc.wantErr)
			}
			if err == nil && f.files != tc.want {
				t.Errorf("-files = %q, want %q", f.files, tc.want)
			}
		})
	}
}

// sectionOf is md's section from the heading to the next of its level.
func sectionOf(t *testing.T, md, heading string) string {
	t.Helper()
	i := strings.Index(md, heading+"\n")
	if i < 0 {
		t.Fatalf("no %q in:\n%s", heading, md)
	}
	s := md[i:]
	if j := strings.Index(s[len(heading):], "\n## "); j >= 0 {
		s = s[:len(heading)+j+1]
	}
	return s
}

// golden compares got with the file, or writes it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -run %s -update writes it again); got:\n%s\nwant:\n%s", path, t.Name(), got, want)
	}
}
