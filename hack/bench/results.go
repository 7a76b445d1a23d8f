package main

import (
	"math"
	"slices"
	"time"
)

// report is docs/benchmarks.json (benchmarks-chart.json for -kind chart):
// the raw figures of one run.
type report struct {
	Date     string      `json:"date"`
	Machine  machine     `json:"machine"`
	Settings settings    `json:"settings"`
	Runs     []runResult `json:"runs"`
}

type settings struct {
	Command string `json:"command"`
	// Kind is -kind: folder (also when empty, in a report from before the
	// flag) or chart.
	Kind             string  `json:"kind,omitempty"`
	RestSeconds      float64 `json:"restSeconds"`
	Edits            int     `json:"edits"`
	BenchConcurrency int     `json:"benchConcurrency"`
	LimitWorkers     int     `json:"limitWorkers"`
	OperatorArgs     string  `json:"operatorArgs"`
}

// runResult is one N on its own control plane.
type runResult struct {
	N     int    `json:"n"`
	Error string `json:"error,omitempty"`
	// LoadBefore and LoadAfter are the machine's 1-minute load average
	// before the plane started and after the operator stopped.
	LoadBefore float64  `json:"loadBefore"`
	LoadAfter  float64  `json:"loadAfter"`
	Operator   *subject `json:"operator,omitempty"`
	Limit      *subject `json:"limit,omitempty"`
}

// subject is what was measured of the operator or of the limit. A nil part
// was not measured.
type subject struct {
	// ColdSeconds is from the process's start to the last object
	// converged; FirstSeconds to the first.
	ColdSeconds  float64 `json:"coldSeconds"`
	FirstSeconds float64 `json:"firstSeconds"`
	Cold         *phase  `json:"cold,omitempty"`
	PeakRSSBytes int64   `json:"peakRSSBytes"`
	// ColdCPUSeconds is the process's CPU time (user and system) from its
	// start to the last object converged: on a machine that runs the API
	// server too, every client CPU second is taken from it.
	ColdCPUSeconds float64 `json:"coldCPUSeconds,omitempty"`
	// From the operator's "Caught up" log line of the cold start.
	CaughtUpSeconds float64  `json:"caughtUpSeconds,omitempty"`
	HeapInuseBytes  int64    `json:"heapInuseBytes,omitempty"`
	Rest            *phase   `json:"rest,omitempty"`
	Restart         *restart `json:"restart,omitempty"`
	Edits           *edits   `json:"edits,omitempty"`
	Burst           *burst   `json:"burst,omitempty"`
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
