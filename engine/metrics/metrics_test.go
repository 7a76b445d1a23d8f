package metrics

import (
	"context"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"

	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/shard"
	"github.com/tmplop/operator/internal/testsupport/metricstest"
)

var (
	memcached = schema.GroupKind{Group: "cache.example.com", Kind: "Memcached"}
	appsvc    = schema.GroupKind{Group: "app.example.com", Kind: "AppService"}
	gone      = schema.GroupKind{Group: "e2e.tmplop.io", Kind: "Gone"}
)

// fakeSource serves fixed Stats; a kind listed without Stats is one
// stopped between Kinds and Stats.
type fakeSource map[schema.GroupKind]*reconcile.Stats

func (f fakeSource) Kinds() []schema.GroupKind {
	out := make([]schema.GroupKind, 0, len(f))
	for gk := range f {
		out = append(out, gk)
	}
	return out
}

func (f fakeSource) Stats(gk schema.GroupKind) *reconcile.Stats { return f[gk] }

func stats(set func(s *reconcile.Stats)) *reconcile.Stats {
	s := &reconcile.Stats{}
	set(s)
	return s
}

func TestStatsCollector(t *testing.T) {
	cases := []struct {
		name  string
		src   fakeSource
		names []string
		want  string
	}{
		{
			name:  "no kind: no series",
			src:   fakeSource{},
			names: []string{"operator_reconcile_total"},
			want:  "",
		},
		{
			name: "results of one kind",
			src: fakeSource{memcached: stats(func(s *reconcile.Stats) {
				s.Succeeded.Store(5)
				s.Requeues.Store(2)
				s.RateLimited.Store(3)
				s.Terminal.Store(1)
				s.Reconciles.Store(100) // not a result: never summed in
			})},
			names: []string{"operator_reconcile_total", "operator_terminal_reconcile_errors_total"},
			want: `
# HELP operator_reconcile_total Total number of reconciliations per kind, by result: success, requeue_after or error.
# TYPE operator_reconcile_total counter
operator_reconcile_total{kind="Memcached.cache.example.com",result="error"} 4
operator_reconcile_total{kind="Memcached.cache.example.com",result="requeue_after"} 2
operator_reconcile_total{kind="Memcached.cache.example.com",result="success"} 5
# HELP operator_terminal_reconcile_errors_total Total number of terminal reconciliation errors per kind: failures not retried with backoff.
# TYPE operator_terminal_reconcile_errors_total counter
operator_terminal_reconcile_errors_total{kind="Memcached.cache.example.com"} 1
`,
		},
		{
			name: "writes of two kinds, a stopped one skipped",
			src: fakeSource{
				memcached: stats(func(s *reconcile.Stats) {
					s.ChildApplies.Store(7)
					s.ChildSkips.Store(11)
					s.Pruned.Store(2)
					s.StatusWrites.Store(9)
					s.PanicsHandled.Store(1)
				}),
				appsvc: stats(func(s *reconcile.Stats) { s.ChildApplies.Store(1) }),
				gone:   nil,
			},
			names: []string{"operator_child_applies_total", "operator_prunes_total", "operator_status_writes_total", "operator_reconcile_panics_total"},
			want: `
# HELP operator_child_applies_total Total number of child applies per kind, by result: written (sent to the API server) or skipped (already as rendered).
# TYPE operator_child_applies_total counter
operator_child_applies_total{kind="AppService.app.example.com",result="skipped"} 0
operator_child_applies_total{kind="AppService.app.example.com",result="written"} 1
operator_child_applies_total{kind="Memcached.cache.example.com",result="skipped"} 11
operator_child_applies_total{kind="Memcached.cache.example.com",result="written"} 7
# HELP operator_prunes_total Total number of children deleted per kind because no template renders them any more, or their parent is gone.
# TYPE operator_prunes_total counter
operator_prunes_total{kind="AppService.app.example.com"} 0
operator_prunes_total{kind="Memcached.cache.example.com"} 2
# HELP operator_reconcile_panics_total Total number of reconciliation panics per kind, recovered and retried.
# TYPE operator_reconcile_panics_total counter
operator_reconcile_panics_total{kind="AppService.app.example.com"} 0
operator_reconcile_panics_total{kind="Memcached.cache.example.com"} 1
# HELP operator_status_writes_total Total number of status writes per kind.
# TYPE operator_status_writes_total counter
operator_status_writes_total{kind="AppService.app.example.com"} 0
operator_status_writes_total{kind="Memcached.cache.example.com"} 9
`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry(tc.src)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want), tc.names...); err != nil {
				t.Error(err)
			}
		})
	}
}

// shardedSource is a replica of a ring: shard "a", the sharder of
// memcached only.
type shardedSource struct {
	fakeSource
	id      string
	sharder map[schema.GroupKind]shard.Stats
}

func (s shardedSource) Shard() string { return s.id }

func (s shardedSource) SharderStats(gk schema.GroupKind) (shard.Stats, bool) {
	st, ok := s.sharder[gk]
	return st, ok
}

// TestShardMetrics: a shard tells which it is and how many objects it
// handed over; the sharder's counters show on the replica that runs it,
// per kind; an unsharded Manager shows none of them.
func TestShardMetrics(t *testing.T) {
	names := []string{"operator_shard_info", "operator_shard_handovers_total", "operator_sharder_assigned_total",
		"operator_sharder_reassigned_total", "operator_sharder_children_moved_total", "operator_sharder_conflicts_total"}
	src := fakeSource{
		memcached: stats(func(s *reconcile.Stats) { s.HandedOver.Store(4) }),
		appsvc:    stats(func(s *reconcile.Stats) {}),
	}
	cases := []struct {
		name string
		src  Source
		want string
	}{
		{name: "not sharded: no shard series", src: src},
		{name: "shard a, sharder of one kind",
			src: shardedSource{fakeSource: src, id: "a", sharder: map[schema.GroupKind]shard.Stats{
				memcached: {Assigned: 10, Reassigned: 3, ChildrenMoved: 6, Conflicts: 1}}},
			want: `
# HELP operator_shard_handovers_total Total number of objects per kind this replica's shard handed over to another shard (its moves out).
# TYPE operator_shard_handovers_total counter
operator_shard_handovers_total{kind="AppService.app.example.com"} 0
operator_shard_handovers_total{kind="Memcached.cache.example.com"} 4
# HELP operator_shard_info The shard this replica holds (run --sharding): its objects are those labelled shard.tmplop.io/shard=<shard>.
# TYPE operator_shard_info gauge
operator_shard_info{shard="a"} 1
# HELP operator_sharder_assigned_total Total number of unassigned objects per kind the sharder labelled with a shard, since it was elected.
# TYPE operator_sharder_assigned_total counter
operator_sharder_assigned_total{kind="Memcached.cache.example.com"} 10
# HELP operator_sharder_children_moved_total Total number of children per kind the sharder moved from a dead shard to the shard of their parent, since it was elected.
# TYPE operator_sharder_children_moved_total counter
operator_sharder_children_moved_total{kind="Memcached.cache.example.com"} 6
# HELP operator_sharder_conflicts_total Total number of the sharder's label writes per kind refused because the object had changed since it was read.
# TYPE operator_sharder_conflicts_total counter
operator_sharder_conflicts_total{kind="Memcached.cache.example.com"} 1
# HELP operator_sharder_reassigned_total Total number of objects per kind the sharder moved from a dead shard to a live one, since it was elected.
# TYPE operator_sharder_reassigned_total counter
operator_sharder_reassigned_total{kind="Memcached.cache.example.com"} 3
`},
		{name: "a Manager that could shard but does not", src: shardedSource{fakeSource: src}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := testutil.GatherAndCompare(newRegistry(tc.src), strings.NewReader(tc.want), names...); err != nil {
				t.Error(err)
			}
		})
	}
}

// conditionSource counts fixed True conditions per kind.
type conditionSource struct {
	fakeSource
	trues map[schema.GroupKind]map[string]int
}

func (c conditionSource) TrueConditions(gk schema.GroupKind, types ...string) map[string]int {
	return c.trues[gk]
}

// TestDriftAndSuspendMetrics: the drift counters per kind and action, and
// the suspended and drifted objects counted from the cache at scrape; a
// source that cannot count conditions shows no gauge.
func TestDriftAndSuspendMetrics(t *testing.T) {
	names := []string{"operator_child_drift_total", "operator_objects_suspended", "operator_objects_drifted"}
	src := fakeSource{memcached: stats(func(s *reconcile.Stats) { s.DriftRepaired.Store(3); s.DriftReported.Store(2) })}
	counters := `
# HELP operator_child_drift_total Total number of children per kind found edited by hand in fields the operator applies while their render was unchanged, by action: repaired (applied again) or reported (drift: warn; counted once per change of the Drifted condition).
# TYPE operator_child_drift_total counter
operator_child_drift_total{action="repaired",kind="Memcached.cache.example.com"} 3
operator_child_drift_total{action="reported",kind="Memcached.cache.example.com"} 2
`
	cases := []struct {
		name string
		src  Source
		want string
	}{
		{name: "no condition counts", src: src, want: counters},
		{name: "suspended and drifted objects", src: conditionSource{fakeSource: src, trues: map[schema.GroupKind]map[string]int{
			memcached: {"Suspended": 4, "Drifted": 1}}}, want: counters + `
# HELP operator_objects_drifted Objects of each served kind whose Drifted condition is True: children edited by hand, left as they are (drift: warn).
# TYPE operator_objects_drifted gauge
operator_objects_drifted{kind="Memcached.cache.example.com"} 1
# HELP operator_objects_suspended Objects of each served kind whose Suspended condition is True: the operator writes nothing for them.
# TYPE operator_objects_suspended gauge
operator_objects_suspended{kind="Memcached.cache.example.com"} 4
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := testutil.GatherAndCompare(newRegistry(tc.src), strings.NewReader(tc.want), names...); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestStatsReadAtScrape: the collector reads the live counters, so a
// later scrape sees later counts with no call on the workers' path.
func TestStatsReadAtScrape(t *testing.T) {
	s := &reconcile.Stats{}
	reg := newRegistry(fakeSource{memcached: s})
	for want := 1; want <= 3; want++ {
		s.Add(func(s *reconcile.Stats) *atomic.Int64 { return &s.Succeeded })
		if got := sample(t, reg, "operator_reconcile_total", map[string]string{"kind": memcached.String(), "result": "success"}); got != float64(want) {
			t.Fatalf("scrape %d: success = %v, want %d", want, got, want)
		}
	}
}

func TestEngineMetrics(t *testing.T) {
	m := newEngineMetrics()
	reg := newRegistry(fakeSource{}, m)
	m.ObserveReconcile(memcached, 30*time.Millisecond)
	m.ObserveReconcile(memcached, 2*time.Second)
	m.ObserveReconcile(appsvc, time.Millisecond)
	m.ObserveRender(memcached, reconcile.RenderChildren, 3*time.Millisecond)
	m.ObserveRender(memcached, reconcile.RenderStatus, 100*time.Microsecond)
	m.ObserveRender(memcached, reconcile.RenderStatus, 200*time.Microsecond)
	m.ObserveRender(memcached, "bogus", time.Second) // not a phase: dropped
	m.ObserveFailure(memcached, "RenderFailed")
	m.ObserveFailure(memcached, "RenderFailed")
	m.ObserveFailure(memcached, "OwnershipConflict")
	m.ObserveFailure(appsvc, "ApplyFailed")

	cases := []struct {
		metric string
		labels map[string]string
		want   float64 // a counter's value, a histogram's count
	}{
		{"operator_reconcile_time_seconds", map[string]string{"kind": "Memcached.cache.example.com"}, 2},
		{"operator_reconcile_time_seconds", map[string]string{"kind": "AppService.app.example.com"}, 1},
		{"operator_render_duration_seconds", map[string]string{"kind": "Memcached.cache.example.com", "phase": "children"}, 1},
		{"operator_render_duration_seconds", map[string]string{"kind": "Memcached.cache.example.com", "phase": "status"}, 2},
		{"operator_reconcile_errors_total", map[string]string{"kind": "Memcached.cache.example.com", "reason": "RenderFailed"}, 2},
		{"operator_reconcile_errors_total", map[string]string{"kind": "Memcached.cache.example.com", "reason": "OwnershipConflict"}, 1},
		{"operator_reconcile_errors_total", map[string]string{"kind": "AppService.app.example.com", "reason": "ApplyFailed"}, 1},
	}
	for _, tc := range cases {
		if got := sample(t, reg, tc.metric, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.metric, tc.labels, got, tc.want)
		}
	}
	// Each kind observed has both phases' series, at zero until used; an
	// unknown phase adds none.
	if n := seriesCount(t, reg, "operator_render_duration_seconds"); n != 4 {
		t.Errorf("render series = %d, want 4 (children and status of two kinds, no bogus phase)", n)
	}
	if got := sample(t, reg, "operator_render_duration_seconds", map[string]string{"kind": appsvc.String(), "phase": "children"}); got != 0 {
		t.Errorf("AppService renders = %v, want 0", got)
	}
	if got := histogramSum(t, reg, "operator_reconcile_time_seconds", map[string]string{"kind": memcached.String()}); got < 2.029 || got > 2.031 {
		t.Errorf("reconcile seconds sum = %v, want 2.03", got)
	}
}

func TestWorkqueueMetrics(t *testing.T) {
	wq := newWorkqueueMetrics()
	reg := newRegistry(fakeSource{}, wq)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: memcached.String(), MetricsProvider: wq})
	defer q.ShutDown()
	q.Add("ns/a")
	q.Add("ns/b")
	q.Add("ns/a") // already queued: not an add
	key, _ := q.Get()
	q.Done(key)

	name := map[string]string{"name": memcached.String()}
	cases := []struct {
		metric string
		want   float64
	}{
		{"workqueue_adds_total", 2},
		{"workqueue_depth", 1},
		{"workqueue_queue_duration_seconds", 1},
		{"workqueue_work_duration_seconds", 1},
		{"workqueue_retries_total", 0},
	}
	for _, tc := range cases {
		if got := sample(t, reg, tc.metric, name); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.metric, got, tc.want)
		}
	}
	q.AddRateLimited("ns/c")
	if got := sample(t, reg, "workqueue_retries_total", name); got != 1 {
		t.Errorf("workqueue_retries_total after a rate-limited add = %v, want 1", got)
	}
}

func TestRESTMetrics(t *testing.T) {
	rm := newRESTMetrics()
	reg := newRegistry(fakeSource{}, rm)
	lat, res := restLatency{rm.latency}, restResult{rm.results}
	u := url.URL{Scheme: "https", Host: "10.0.0.1:6443", Path: "/apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds/secret-name"}
	lat.Observe(context.Background(), "GET", u, 20*time.Millisecond)
	lat.Observe(context.Background(), "PATCH", u, 20*time.Millisecond)
	res.Increment(context.Background(), "200", "GET", u.Host)
	res.Increment(context.Background(), "409", "PATCH", u.Host)
	res.Increment(context.Background(), "200", "GET", u.Host)

	if got := sample(t, reg, "rest_client_request_duration_seconds", map[string]string{"verb": "GET", "host": u.Host}); got != 1 {
		t.Errorf("GET latency count = %v, want 1", got)
	}
	if got := sample(t, reg, "rest_client_requests_total", map[string]string{"code": "200", "method": "GET", "host": u.Host}); got != 2 {
		t.Errorf("200 GET = %v, want 2", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "secret-name") {
					t.Errorf("%s carries an object's name in label %s", mf.GetName(), l.GetName())
				}
			}
		}
	}
}

// TestInstall: the process-wide hooks feed the registry of NewRegistry:
// the reconcile observer, and queues created after Install.
func TestInstall(t *testing.T) {
	src := fakeSource{memcached: &reconcile.Stats{}}
	reg := NewRegistry(src)
	NewRegistry(src) // a second registry and Install are harmless
	reconcile.ObserveReconcile(memcached, time.Millisecond)
	if got := sample(t, reg, "operator_reconcile_time_seconds", map[string]string{"kind": memcached.String()}); got < 1 {
		t.Errorf("reconcile observed through reconcile.ObserveReconcile: count %v, want >= 1", got)
	}
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "install-test"})
	defer q.ShutDown()
	q.Add("x")
	if got := sample(t, reg, "workqueue_adds_total", map[string]string{"name": "install-test"}); got != 1 {
		t.Errorf("workqueue_adds_total of a queue created after Install = %v, want 1", got)
	}
	if n := seriesCount(t, reg, "go_goroutines") + seriesCount(t, reg, "process_cpu_seconds_total"); n < 1 {
		t.Error("no Go or process collector series")
	}
}

// TestLint: every metric of the registry follows Prometheus' conventions.
func TestLint(t *testing.T) {
	m := newEngineMetrics()
	m.ObserveReconcile(memcached, time.Millisecond)
	m.ObserveRender(memcached, reconcile.RenderChildren, time.Millisecond)
	m.ObserveFailure(memcached, "RenderFailed")
	wq, rm := newWorkqueueMetrics(), newRESTMetrics()
	wq.NewAddsMetric("q").Inc()
	rm.results.WithLabelValues("200", "GET", "h").Inc()
	rm.latency.WithLabelValues("GET", "h").Observe(1)
	reg := newRegistry(fakeSource{memcached: &reconcile.Stats{}}, m, wq, rm)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var ours []*dto.MetricFamily
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "go_") && !strings.HasPrefix(mf.GetName(), "process_") {
			ours = append(ours, mf)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(ours).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// sample returns the value of the series of metric with labels: a
// counter's or gauge's value, a histogram's count. It fails the test when
// there is no such series.
func sample(t *testing.T, g prometheus.Gatherer, metric string, labels map[string]string) float64 {
	t.Helper()
	m := find(t, g, metric, labels)
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	t.Fatalf("%s: unexpected type", metric)
	return 0
}

func histogramSum(t *testing.T, g prometheus.Gatherer, metric string, labels map[string]string) float64 {
	t.Helper()
	return find(t, g, metric, labels).GetHistogram().GetSampleSum()
}

func find(t *testing.T, g prometheus.Gatherer, metric string, labels map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if ms := metricstest.Series(mf, labels); mf.GetName() == metric && len(ms) > 0 {
			return ms[0]
		}
	}
	t.Fatalf("no series %s%v", metric, labels)
	return nil
}

func seriesCount(t *testing.T, g prometheus.Gatherer, metric string) int {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == metric {
			return len(mf.GetMetric())
		}
	}
	return 0
}

// rolloutSource is a Source whose kinds roll out in steps.
type rolloutSource struct {
	fakeSource
	rollouts map[schema.GroupKind][5]any // step, steps, phase, from, to
}

func (r rolloutSource) Rollout(gk schema.GroupKind) (step, steps int, phase string, from, to int64, ok bool) {
	v, ok := r.rollouts[gk]
	if !ok {
		return 0, 0, "", 0, 0, false
	}
	return v[0].(int), v[1].(int), v[2].(string), v[3].(int64), v[4].(int64), true
}

// TestRolloutMetrics: a staged kind's rollout is one step gauge and one
// info series; a kind that rolls out all at once, or a source that cannot
// say, has none.
func TestRolloutMetrics(t *testing.T) {
	names := []string{"operator_rollout_step", "operator_rollout_info"}
	appservice := schema.GroupKind{Group: "app.example.com", Kind: "AppService"}
	src := fakeSource{memcached: stats(func(*reconcile.Stats) {}), appservice: stats(func(*reconcile.Stats) {})}
	for _, tc := range []struct {
		name string
		src  Source
		want string
	}{
		{name: "no rollout reader", src: src},
		{name: "one kind halted at step 2", src: rolloutSource{fakeSource: src, rollouts: map[schema.GroupKind][5]any{memcached: {2, 4, "Halted", int64(4), int64(5)}}}, want: `
# HELP operator_rollout_info 1 for each staged kind's rollout: its phase (Progressing, Paused, Halted, Complete) and the revisions it goes from and to.
# TYPE operator_rollout_info gauge
operator_rollout_info{from="4",kind="Memcached.cache.example.com",phase="Halted",to="5"} 1
# HELP operator_rollout_step The step in progress of each staged kind's rollout, from 1 (kind.yaml rollout: steps), beside the number of steps.
# TYPE operator_rollout_step gauge
operator_rollout_step{kind="Memcached.cache.example.com",steps="4"} 2
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := testutil.GatherAndCompare(newRegistry(tc.src), strings.NewReader(tc.want), names...); err != nil {
				t.Error(err)
			}
		})
	}
}
