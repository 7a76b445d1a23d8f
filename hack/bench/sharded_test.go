package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

func TestCountLabel(t *testing.T) {
	const key = "shard.tmplop.io/shard"
	for name, tc := range map[string]struct {
		labels []map[string]string
		want   map[string]int
	}{
		"none":             {nil, map[string]int{}},
		"all unlabelled":   {[]map[string]string{nil, {}, {"app": "x"}}, map[string]int{"": 3}},
		"one shard":        {[]map[string]string{{key: "s1"}, {key: "s1", "app": "x"}}, map[string]int{"s1": 2}},
		"three and a rest": {[]map[string]string{{key: "s1"}, {key: "s2"}, {key: "s3"}, {key: "s2"}, {"other": "s1"}}, map[string]int{"s1": 1, "s2": 2, "s3": 1, "": 1}},
		"other label only": {[]map[string]string{{"shard.tmplop.io/held-by": "s1"}}, map[string]int{"": 1}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := countLabel(tc.labels, key); !maps.Equal(got, tc.want) {
				t.Errorf("countLabel = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestShardArgs(t *testing.T) {
	base := operatorArgs("hack/bench/templates", "k.kubeconfig")
	for name, tc := range map[string]struct {
		i    int
		want []string
	}{
		"first":  {0, []string{"--sharding", "--shard-id", "s1", "--leader-election-namespace", "bench-system"}},
		"third":  {2, []string{"--sharding", "--shard-id", "s3", "--leader-election-namespace", "bench-system"}},
		"twelve": {11, []string{"--sharding", "--shard-id", "s12", "--leader-election-namespace", "bench-system"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := shardArgs(base, shardID(tc.i))
			if want := append(slices.Clone(base), tc.want...); !slices.Equal(got, want) {
				t.Errorf("shardArgs = %q, want %q", got, want)
			}
		})
	}
	// Each replica's arguments are its own.
	a, b := shardArgs(base[:len(base):len(base)], "s1"), shardArgs(base, "s2")
	if a[len(a)-3] != "s1" || b[len(b)-3] != "s2" {
		t.Errorf("the replicas share their arguments: %q, %q", a, b)
	}
}

func TestElectedSharder(t *testing.T) {
	for name, tc := range map[string]struct {
		out  string
		want bool
	}{
		"none":      {"", false},
		"elected":   {`I1126 12:00:00.000000 1 sharding.go:101] "Elected sharder" shard="s2"` + "\n", true},
		"among":     {"a\n" + `I1126 "Caught up" objects=0` + "\n" + `I1126 "Elected sharder" shard="s1"` + "\n", true},
		"lost only": {`E1126 "Sharder election lost: exiting"` + "\n", false},
		"unquoted":  {"Elected sharder\n", false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := electedSharder(tc.out); got != tc.want {
				t.Errorf("electedSharder = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestShardedAggregates(t *testing.T) {
	rp := func(id string, rss int64, cpu float64) *replica {
		return &replica{ID: id, PeakRSSBytes: rss << 20, CPUSeconds: cpu}
	}
	cpu := func(r *replica) float64 { return r.CPUSeconds }
	for name, tc := range map[string]struct {
		replicas        []*replica
		largest         string
		largestRSS      int64
		sumCPU, mostCPU float64
	}{
		"none":        {nil, "", 0, 0, 0},
		"one":         {[]*replica{rp("s1", 80, 10)}, "s1", 80 << 20, 10, 10},
		"three":       {[]*replica{rp("s1", 80, 10), rp("s2", 95, 30), rp("s3", 70, 12)}, "s2", 95 << 20, 52, 30},
		"equal peaks": {[]*replica{rp("s1", 90, 1), rp("s2", 90, 2)}, "s1", 90 << 20, 3, 2},
		"last":        {[]*replica{rp("s1", 1, 1), rp("s2", 2, 2), rp("s3", 3, 0.5)}, "s3", 3 << 20, 3.5, 2},
	} {
		t.Run(name, func(t *testing.T) {
			s := &shardedRun{Replicas: tc.replicas}
			if l := s.largestRSS(); l.ID != tc.largest || l.PeakRSSBytes != tc.largestRSS {
				t.Errorf("largestRSS = %s %d, want %s %d", l.ID, l.PeakRSSBytes, tc.largest, tc.largestRSS)
			}
			if got := s.sum(cpu); got != tc.sumCPU {
				t.Errorf("sum of CPU = %v, want %v", got, tc.sumCPU)
			}
			if got := s.most(cpu); got != tc.mostCPU {
				t.Errorf("most CPU = %v, want %v", got, tc.mostCPU)
			}
		})
	}
}

func TestParseShardsFlag(t *testing.T) {
	for name, tc := range map[string]struct {
		args    []string
		want    int
		wantErr bool
	}{
		"default":  {nil, 0, false},
		"off":      {[]string{"-shards", "0"}, 0, false},
		"three":    {[]string{"-shards", "3"}, 3, false},
		"one":      {[]string{"-shards", "1"}, 0, true},
		"negative": {[]string{"-shards", "-2"}, 0, true},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := parseBenchFlags(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseBenchFlags(%q): error %v, want an error: %v", tc.args, err, tc.wantErr)
			}
			if err == nil && f.shards != tc.want {
				t.Errorf("-shards = %d, want %d", f.shards, tc.want)
			}
		})
	}
}

// shardedReport is a run of -runs 2 -shards 3 at N=1000.
func shardedReport() *report {
	cold := func(sec, cpu float64, rss, anon, file int64, measured int64) *subject {
		return &subject{ColdSeconds: sec, FirstSeconds: 0.2, ColdCPUSeconds: cpu, PeakRSSBytes: rss << 20,
			RSSAnonBytes: anon << 20, RSSFileBytes: file << 20, Cold: &phase{Measured: measured, Writes: 3000,
				Rows: []row{{requestKey{Verb: "APPLY", Group: "apps", Resource: "deployments"}, 1000}}}}
	}
	rp := func(id string, sharder bool, objects int, rss, anon, file int64, cpu float64) *replica {
		return &replica{ID: id, Sharder: sharder, Objects: objects, Children: 2 * objects, PeakRSSBytes: rss << 20,
			RSSAnonBytes: anon << 20, RSSFileBytes: file << 20, CPUSeconds: cpu, StopSeconds: 0.5}
	}
	sharded := func(sec float64, measured int64, reps ...*replica) *shardedRun {
		return &shardedRun{ColdSeconds: sec, FirstSeconds: 0.9, StartSeconds: 0.02, Replicas: reps,
			Cold: &phase{Measured: measured, Writes: 4000, Rows: []row{
				{requestKey{Verb: "APPLY", Group: "apps", Resource: "deployments"}, 1000},
				{requestKey{Verb: "GET", Group: "apps", Resource: "deployments"}, 1000},
			}}}
	}
	return &report{
		Date:     "2026-11-27T10:00:00Z",
		Machine:  machine{Cores: 2, MemoryBytes: 24 << 30, Go: "go1.26.8", Kubernetes: "v1.37.2", Plane: "etcd + kube-apiserver"},
		Settings: settings{Command: "go run . -n 1000 -runs 2 -shards 3", Runs: 2, RestSeconds: 60, Edits: 200, OperatorArgs: "run --templates hack/bench/templates", Shards: 3},
		Runs: []runResult{{
			N:         1000,
			Limits:    []*subject{cold(12, 2.5, 40, 15, 25, 3001), cold(14, 2.7, 41, 16, 25, 3001)},
			Operators: []*subject{cold(14, 4.0, 60, 30, 30, 3010), cold(16, 4.4, 64, 32, 32, 3010)},
			Sharded: []*shardedRun{
				sharded(20, 6000, rp("s1", true, 340, 50, 20, 30, 3), rp("s2", false, 330, 48, 18, 30, 2), rp("s3", false, 330, 47, 17, 30, 2)),
				sharded(22, 6100, rp("s1", false, 300, 46, 16, 30, 2), rp("s2", true, 400, 54, 24, 30, 4), rp("s3", false, 300, 45, 15, 30, 2)),
			},
		}},
	}
}

func TestShardedMarkdown(t *testing.T) {
	md := string(shardedMarkdown(shardedReport(), benchapp.Kinds[0]))
	for _, want := range []string{
		"# Benchmarks: the operator as 3 shards",
		"Run: `go run . -n 1000 -runs 2 -shards 3` in hack/bench.",
		"### Cold start: 3 shards beside one replica and the limit, median of 2 runs (least–greatest)",
		// 21 s against 15 and 13.
		"| cold convergence, all N objects (s) | 21.00 (20.00–22.00) | 15.00 (14.00–16.00) | 13.00 (12.00–14.00) | 1.40× | 1.62× |",
		"| requests per object, cold (reads included) | 6.050 (6.000–6.100) | 3.010 (3.010–3.010) | 3.001 (3.001–3.001) | 2.01× | 2.02× |",
		"| … of which writes | 4.000 (4.000–4.000) | 3.000 (3.000–3.000) | 3.000 (3.000–3.000) | 1.33× | 1.33× |",
		// 7 and 8 s of CPU together; 3 and 4 the busiest.
		"| CPU time, cold (s; the shards': all replicas together) | 7.50 (7.00–8.00) | 4.20 (4.00–4.40) | 2.60 (2.50–2.70) | 1.79× | 2.88× |",
		"| CPU time, cold (s; the shards': the busiest replica's) | 3.50 (3.00–4.00) |",
		// The largest replica: 50 and 54 MiB, against one replica's 62.
		"| peak RSS (MiB; the shards': the largest replica's) | 52.0 (50.0–54.0) | 62.0 (60.0–64.0) | 40.5 (40.0–41.0) | 0.84× | 1.28× |",
		"| … resident then: anonymous (MiB; the largest replica's) | 22.0 (20.0–24.0) | 31.0 (30.0–32.0) |",
		"| peak RSS of all replicas together (MiB) | 145.0 (145.0–145.0) | 62.0 (60.0–64.0) |",
		"| replicas started, first to last (s) | 0.020 (0.020–0.020) | — | — |  |  |",
		"The peak RSS ratio is to one replica's median (62.0 MiB).",
		"| 1 | s1 | yes | 340 (34.0%) | 680 | 50.0 | 0.81× | 20.0 / 30.0 | 3.00 | 0.50, 0 |",
		"| 2 | s2 | yes | 400 (40.0%) | 800 | 54.0 | 0.87× | 24.0 / 30.0 | 4.00 | 0.50, 0 |",
		"| 2 | s3 |  | 300 (30.0%) | 600 | 45.0 | 0.73× | 15.0 / 30.0 | 2.00 | 0.50, 0 |",
		"| verb resource | 3 shards | one replica | limit |",
		"| GET deployments.apps | 1.000 | 0.000 | 0.000 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the sharded markdown has no line %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "no shard label") {
		t.Errorf("no BenchApp was unassigned, yet:\n%s", md)
	}
}

func TestShardedMarkdownFailedRun(t *testing.T) {
	rep := shardedReport()
	rep.Runs[0].Sharded[1].Unassigned = 30
	rep.Runs = append(rep.Runs, runResult{N: 10000, Error: "3 shards, run 1: cold: 9000 of 10000 objects converged",
		Limits: rep.Runs[0].Limits[:1], Operators: rep.Runs[0].Operators[:1]})
	md := string(shardedMarkdown(rep, benchapp.Kinds[0]))
	for _, want := range []string{
		"Run 2: 30 BenchApps had no shard label at the end.",
		"## N = 10,000\n\n**The run did not complete:** `3 shards, run 1: cold: 9000 of 10000 objects converged`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the sharded markdown has no %q:\n%s", want, md)
		}
	}
	if i := strings.Index(md, "## N = 10,000"); strings.Contains(md[i:], "### Cold start") {
		t.Errorf("a failed N without sharded runs has a table:\n%s", md[i:])
	}
}

func TestWriteShardedReport(t *testing.T) {
	for name, tc := range map[string]struct {
		rep         *report
		wantSharded bool
	}{
		"with shards": {shardedReport(), true},
		"without": {func() *report {
			r := shardedReport()
			r.Settings.Shards, r.Runs[0].Sharded = 0, nil
			return r
		}(), false},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := writeReport(dir, tc.rep); err != nil {
				t.Fatal(err)
			}
			main, err := os.ReadFile(filepath.Join(dir, "benchmarks.json"))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(main), "shardedRuns"); got != tc.wantSharded {
				t.Errorf("benchmarks.json has shardedRuns: %v, want %v", got, tc.wantSharded)
			}
			md, err := os.ReadFile(filepath.Join(dir, "benchmarks.md"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(md), "Each replica") || strings.Contains(string(md), "shards beside") {
				t.Errorf("the main report has the sharded tables:\n%s", md)
			}
			_, err = os.Stat(filepath.Join(dir, "benchmarks-sharded.md"))
			if got := err == nil; got != tc.wantSharded {
				t.Fatalf("benchmarks-sharded.md written: %v, want %v", got, tc.wantSharded)
			}
			if !tc.wantSharded {
				return
			}
			data, err := os.ReadFile(filepath.Join(dir, "benchmarks-sharded.json"))
			if err != nil {
				t.Fatal(err)
			}
			again, err := decodeReport(data)
			if err != nil {
				t.Fatal(err)
			}
			got := again.Runs[0].Sharded
			if len(got) != 2 || len(got[1].Replicas) != 3 || !got[1].Replicas[1].Sharder || got[1].Replicas[1].Objects != 400 {
				b, _ := json.Marshal(got)
				t.Errorf("the sharded runs read again: %s", b)
			}
			// Rendered again from the sharded JSON: the sharded report
			// alone, the same.
			out := t.TempDir()
			if err := rerender(filepath.Join(dir, "benchmarks-sharded.json"), out, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(out, "benchmarks.md")); err == nil {
				t.Error("rendering the sharded JSON wrote the main report")
			}
			before, _ := os.ReadFile(filepath.Join(dir, "benchmarks-sharded.md"))
			after, err := os.ReadFile(filepath.Join(out, "benchmarks-sharded.md"))
			if err != nil || string(before) != string(after) {
				t.Errorf("rendered again (%v), the sharded report differs", err)
			}
		})
	}
}
