package main

import (
	"encoding/json"
	"math"
	"slices"
	"time"
)

// report is docs/benchmarks.json (benchmarks-chart.json for -kind chart):
// the raw figures of one run of the bench.
type report struct {
	Date     string      `json:"date"`
	Machine  machine     `json:"machine"`
	Settings settings    `json:"settings"`
	Runs     []runResult `json:"runs"`
}

type settings struct {
	Command string `json:"command"`
	// Runs is -runs, the cold runs of each client per N (0 in a report
	// from before the flag: one).
	Runs int `json:"runs,omitempty"`
	// Kind is -kind: folder (also when empty, in a report from before the
	// flag) or chart.
	Kind             string  `json:"kind,omitempty"`
	RestSeconds      float64 `json:"restSeconds"`
	Edits            int     `json:"edits"`
	BenchConcurrency int     `json:"benchConcurrency"`
	LimitWorkers     int     `json:"limitWorkers"`
	OperatorArgs     string  `json:"operatorArgs"`
	// Shards is -shards: K replicas of the operator as the shards of one
	// ring, cold only, after each operator run (0: not run).
	Shards int `json:"shards,omitempty"`
	// Controller is -controller: the hand-written controller ran, cold
	// only, after each operator run.
	Controller bool `json:"controller,omitempty"`
	// Files is -files: the base name of the report's files in -out
	// (empty, in a report from before the flag: the kind's Files).
	Files string `json:"files,omitempty"`
}

// runResult is one N: each client's cold runs, interleaved limit,
// operator, limit, ..., each on a fresh control plane.
type runResult struct {
	N     int    `json:"n"`
	Error string `json:"error,omitempty"`
	// LoadBefore and LoadAfter are the machine's 1-minute load average
	// before the first plane started and after the last stopped.
	LoadBefore float64 `json:"loadBefore"`
	LoadAfter  float64 `json:"loadAfter"`
	// Operators and Limits are the cold runs in the order run; only the
	// last of each goes on to the later phases (rest, restart, changes,
	// burst).
	Operators []*subject `json:"operatorRuns,omitempty"`
	Limits    []*subject `json:"limitRuns,omitempty"`
	// Sharded are the cold runs of -shards replicas, each after the
	// operator run of the same number.
	Sharded []*shardedRun `json:"shardedRuns,omitempty"`
	// Controllers are the cold runs of the hand-written controller, each
	// after the operator run of the same number.
	Controllers []*subject `json:"controllerRuns,omitempty"`
	// Operator and Limit are the one run of each of a report from before
	// -runs; decodeReport moves them into Operators and Limits.
	Operator *subject `json:"operator,omitempty"`
	Limit    *subject `json:"limit,omitempty"`
}

// lastRun is the run that went on to the later phases, nil if none ran.
func lastRun(runs []*subject) *subject {
	if len(runs) == 0 {
		return nil
	}
	return runs[len(runs)-1]
}

// coldRuns are the runs whose cold start was measured.
func coldRuns(runs []*subject) []*subject {
	var out []*subject
	for _, s := range runs {
		if s != nil && s.Cold != nil {
			out = append(out, s)
		}
	}
	return out
}

// spread is a figure over the runs: its median, least and greatest.
type spread struct {
	Median, Min, Max float64
	Runs             int
}

// spreadOf is figure over runs; the zero spread for none.
func spreadOf[T any](runs []T, figure func(T) float64) spread {
	var v []float64
	for _, s := range runs {
		v = append(v, figure(s))
	}
	if len(v) == 0 {
		return spread{}
	}
	return spread{Median: median(v), Min: slices.Min(v), Max: slices.Max(v), Runs: len(v)}
}

// median is the middle value, the mean of the two middle ones for an even
// count, 0 for none.
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(values))
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// subject is what was measured of the operator or of the limit. A nil part
// was not measured.
type subject struct {
	// ColdSeconds is from the process's start to the last object
	// converged; FirstSeconds to the first.
	ColdSeconds  float64 `json:"coldSeconds"`
	FirstSeconds float64 `json:"firstSeconds"`
	Cold         *phase  `json:"cold,omitempty"`
	// PeakRSSBytes is the process's VmHWM once cold: the operator's at
	// "Caught up" (in a report from before -runs, after the rest too), the
	// limit's after its cold pass.
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// RSSAnonBytes and RSSFileBytes split what is resident when the peak
	// is read: anonymous memory, which grows with the objects, and the
	// binary's file pages, which do not.
	RSSAnonBytes int64 `json:"rssAnonBytes,omitempty"`
	RSSFileBytes int64 `json:"rssFileBytes,omitempty"`
	// ColdCPUSeconds is the process's CPU time (user and system) from its
	// start to the last object converged: on a machine that runs the API
	// server too, every client CPU second is taken from it.
	ColdCPUSeconds float64 `json:"coldCPUSeconds,omitempty"`
	// LoadBefore is the machine's 1-minute load average before this run's
	// plane started.
	LoadBefore float64 `json:"loadBefore,omitempty"`
	// From the operator's "Caught up" log line of the cold start.
	CaughtUpSeconds float64 `json:"caughtUpSeconds,omitempty"`
	HeapInuseBytes  int64   `json:"heapInuseBytes,omitempty"`
	Rest            *phase  `json:"rest,omitempty"`
	// PeakRSSRestBytes is the operator's VmHWM after the rest.
	PeakRSSRestBytes int64    `json:"peakRSSRestBytes,omitempty"`
	Restart          *restart `json:"restart,omitempty"`
	Edits            *edits   `json:"edits,omitempty"`
	Burst            *burst   `json:"burst,omitempty"`
	// PeakRSSAfterBytes is the restarted operator's peak, after the
	// changes.
	PeakRSSAfterBytes int64 `json:"peakRSSAfterBytes,omitempty"`
}

// phase is the requests of one measured phase.
type phase struct {
	Seconds float64 `json:"seconds"`
	// Measured is the measured client's requests (its service account,
	// counted by APF), Writes its writes among them.
	Measured int64 `json:"measured"`
	Writes   int64 `json:"writes"`
	// Rejected is requests APF answered 429, any client.
	Rejected int64 `json:"rejected"`
	// Bench is the bench's own requests in the phase (as an admin: its
	// patches, its /metrics scrapes, its watches reconnecting).
	Bench int64 `json:"bench"`
	// Rows is every request kube-apiserver served in the phase, by verb
	// and resource, whoever sent it.
	Rows []row `json:"rows"`
}

type row struct {
	requestKey
	Count int64 `json:"count"`
}

type restart struct {
	ExitCode    int     `json:"exitCode"`
	StopSeconds float64 `json:"stopSeconds"`
	// CaughtUpSeconds is from the new process's start until the bench saw
	// its "Caught up" line; LogSeconds is the seconds that line reports.
	CaughtUpSeconds float64 `json:"caughtUpSeconds"`
	LogSeconds      float64 `json:"logSeconds"`
	Requests        *phase  `json:"requests"`
}

type edits struct {
	Count    int       `json:"count"`
	P50      float64   `json:"p50Seconds"`
	P99      float64   `json:"p99Seconds"`
	Max      float64   `json:"maxSeconds"`
	Seconds  []float64 `json:"seconds"`
	Requests *phase    `json:"requests"`
}

type burst struct {
	Seconds  float64 `json:"seconds"`
	Requests *phase  `json:"requests"`
}

func newEdits(lat []time.Duration, p *phase) *edits {
	e := &edits{Count: len(lat), Requests: p}
	for _, d := range lat {
		e.Seconds = append(e.Seconds, d.Seconds())
	}
	sorted := slices.Sorted(slices.Values(e.Seconds))
	e.P50, e.P99 = percentile(sorted, 0.50), percentile(sorted, 0.99)
	if len(sorted) > 0 {
		e.Max = sorted[len(sorted)-1]
	}
	return e
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// rowsOf turns a diff's map into rows, largest first.
func rowsOf(m map[requestKey]int64) []row {
	var out []row
	for _, k := range sortedKeys(m) {
		out = append(out, row{requestKey: k, Count: m[k]})
	}
	return out
}

// decodeReport reads a report's JSON, also one from before -runs (one run
// of each client, in "operator" and "limit").
func decodeReport(data []byte) (*report, error) {
	rep := &report{}
	if err := json.Unmarshal(data, rep); err != nil {
		return nil, err
	}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if len(r.Operators) == 0 && r.Operator != nil {
			r.Operators = []*subject{r.Operator}
		}
		if len(r.Limits) == 0 && r.Limit != nil {
			r.Limits = []*subject{r.Limit}
		}
		r.Operator, r.Limit = nil, nil
	}
	rep.Settings.Runs = max(rep.Settings.Runs, 1)
	return rep, nil
}
