package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/shard"
	"github.com/tmplop/operator/engine/status"
)

// Source is where the per-kind counters are read at scrape time; a
// *controller.Manager is one.
type Source interface {
	// Kinds returns the kinds being served.
	Kinds() []schema.GroupKind
	// Stats returns the counters of kind gk, or nil when it is not served.
	Stats(gk schema.GroupKind) *reconcile.Stats
}

// ObjectCounter is a Source that can also count each served kind's objects
// by their Ready condition ("True", "False", "Unknown"; "" for none yet),
// from its watch's cache: operator_objects.
type ObjectCounter interface {
	Objects(gk schema.GroupKind) map[string]int
}

// RolloutReader is a Source that can also say where each served kind's
// staged rollout is (engine/rollout); ok false for a kind that rolls out
// all at once.
type RolloutReader interface {
	Rollout(gk schema.GroupKind) (step, steps int, phase string, from, to int64, ok bool)
}

// ConditionCounter is a Source that can count each served kind's objects
// whose condition of each of types is True, from its watch's cache:
// operator_objects_suspended (Suspended) and operator_objects_drifted
// (Drifted).
type ConditionCounter interface {
	TrueConditions(gk schema.GroupKind, types ...string) map[string]int
}

// ShardCounter is a Source run as one shard of a ring (run --sharding):
// its shard, and each kind's sharder counters while this replica is the
// ring's sharder.
type ShardCounter interface {
	Shard() string
	SharderStats(gk schema.GroupKind) (shard.Stats, bool)
}

// The values of the result label of operator_reconcile_total.
const (
	// ResultSuccess: reconciled, with no requeue asked.
	ResultSuccess = "success"
	// ResultRequeueAfter: reconciled, and a template or the deletion guard
	// asked to reconcile again after a while (requeueAfter).
	ResultRequeueAfter = "requeue_after"
	// ResultError: failed, whether retried with backoff or terminal.
	ResultError = "error"
)

// The values of the action label of operator_child_drift_total.
const (
	DriftRepaired = "repaired" // applied again (kind.yaml drift: repair)
	DriftReported = "reported" // left as it is, reported (drift: warn)
)

// The values of the result label of operator_child_applies_total.
const (
	ApplyWritten = "written" // the apply was sent to the API server
	ApplySkipped = "skipped" // the child already was as rendered
)

// Buckets of operator_reconcile_time_seconds: controller-runtime's own.
var reconcileBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
	1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60}

// Buckets of operator_render_duration_seconds: renders take from tens of
// microseconds to the render budget (2 s by default).
var renderBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// engineMetrics are what reconcile.Stats lacks, fed by reconcile.Observer.
type engineMetrics struct {
	reconcileTime *prometheus.HistogramVec
	renderTime    *prometheus.HistogramVec
	errors        *prometheus.CounterVec

	kinds sync.Map // schema.GroupKind -> *kindObservers
}

// kindObservers are one kind's series, bound once: the workers' path pays
// a map lookup, not a label hash and a string build per reconcile.
type kindObservers struct {
	kind           string
	reconcileTime  prometheus.Observer
	renderChildren prometheus.Observer
	renderStatus   prometheus.Observer
}

var _ reconcile.Observer = (*engineMetrics)(nil)

func newEngineMetrics() *engineMetrics {
	return &engineMetrics{
		reconcileTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "operator_reconcile_time_seconds",
			Help:    "Length of time per reconciliation per kind, from taking the key off the queue to the requeue decision.",
			Buckets: reconcileBuckets,
		}, []string{"kind"}),
		renderTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "operator_render_duration_seconds",
			Help:    "Length of time per render of a kind's templates, by phase: children or status.",
			Buckets: renderBuckets,
		}, []string{"kind", "phase"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "operator_reconcile_errors_total",
			Help: "Total number of reconciliations per kind that failed and reported it on the object, by the reason of its Reconciled condition.",
		}, []string{"kind", "reason"}),
	}
}

func (m *engineMetrics) of(gk schema.GroupKind) *kindObservers {
	if o, ok := m.kinds.Load(gk); ok {
		return o.(*kindObservers)
	}
	k := gk.String()
	o, _ := m.kinds.LoadOrStore(gk, &kindObservers{
		kind:           k,
		reconcileTime:  m.reconcileTime.WithLabelValues(k),
		renderChildren: m.renderTime.WithLabelValues(k, reconcile.RenderChildren),
		renderStatus:   m.renderTime.WithLabelValues(k, reconcile.RenderStatus),
	})
	return o.(*kindObservers)
}

// ObserveReconcile implements reconcile.Observer.
func (m *engineMetrics) ObserveReconcile(kind schema.GroupKind, d time.Duration) {
	m.of(kind).reconcileTime.Observe(d.Seconds())
}

// ObserveRender implements reconcile.Observer.
func (m *engineMetrics) ObserveRender(kind schema.GroupKind, phase string, d time.Duration) {
	o := m.of(kind)
	switch phase {
	case reconcile.RenderChildren:
		o.renderChildren.Observe(d.Seconds())
	case reconcile.RenderStatus:
		o.renderStatus.Observe(d.Seconds())
	}
}

// ObserveFailure implements reconcile.Observer.
func (m *engineMetrics) ObserveFailure(kind schema.GroupKind, reason string) {
	m.errors.WithLabelValues(m.of(kind).kind, reason).Inc()
}

// Describe implements prometheus.Collector.
func (m *engineMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.reconcileTime.Describe(ch)
	m.renderTime.Describe(ch)
	m.errors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *engineMetrics) Collect(ch chan<- prometheus.Metric) {
	m.reconcileTime.Collect(ch)
	m.renderTime.Collect(ch)
	m.errors.Collect(ch)
}

// statsCollector reads each served kind's reconcile.Stats at scrape time.
type statsCollector struct{ src Source }

var (
	reconcileTotalDesc = prometheus.NewDesc("operator_reconcile_total",
		"Total number of reconciliations per kind, by result: success, requeue_after or error.", []string{"kind", "result"}, nil)
	terminalErrorsDesc = prometheus.NewDesc("operator_terminal_reconcile_errors_total",
		"Total number of terminal reconciliation errors per kind: failures not retried with backoff.", []string{"kind"}, nil)
	panicsDesc = prometheus.NewDesc("operator_reconcile_panics_total",
		"Total number of reconciliation panics per kind, recovered and retried.", []string{"kind"}, nil)
	childAppliesDesc = prometheus.NewDesc("operator_child_applies_total",
		"Total number of child applies per kind, by result: written (sent to the API server) or skipped (already as rendered).", []string{"kind", "result"}, nil)
	prunesDesc = prometheus.NewDesc("operator_prunes_total",
		"Total number of children deleted per kind because no template renders them any more, or their parent is gone.", []string{"kind"}, nil)
	statusWritesDesc = prometheus.NewDesc("operator_status_writes_total",
		"Total number of status writes per kind.", []string{"kind"}, nil)
	childDriftDesc = prometheus.NewDesc("operator_child_drift_total",
		"Total number of children per kind found edited by hand in fields the operator applies while their render was unchanged, by action: repaired (applied again) or reported (drift: warn; counted once per change of the Drifted condition).", []string{"kind", "action"}, nil)
	suspendedDesc = prometheus.NewDesc("operator_objects_suspended",
		"Objects of each served kind whose Suspended condition is True: the operator writes nothing for them.", []string{"kind"}, nil)
	driftedDesc = prometheus.NewDesc("operator_objects_drifted",
		"Objects of each served kind whose Drifted condition is True: children edited by hand, left as they are (drift: warn).", []string{"kind"}, nil)
	rolloutStepDesc = prometheus.NewDesc("operator_rollout_step",
		"The step in progress of each staged kind's rollout, from 1 (kind.yaml rollout: steps), beside the number of steps.", []string{"kind", "steps"}, nil)
	rolloutInfoDesc = prometheus.NewDesc("operator_rollout_info",
		"1 for each staged kind's rollout: its phase (Progressing, Paused, Halted, Complete) and the revisions it goes from and to.", []string{"kind", "phase", "from", "to"}, nil)
	shardInfoDesc = prometheus.NewDesc("operator_shard_info",
		"The shard this replica holds (run --sharding): its objects are those labelled shard.tmplop.io/shard=<shard>.", []string{"shard"}, nil)
	handoversDesc = prometheus.NewDesc("operator_shard_handovers_total",
		"Total number of objects per kind this replica's shard handed over to another shard (its moves out).", []string{"kind"}, nil)
	sharderAssignedDesc = prometheus.NewDesc("operator_sharder_assigned_total",
		"Total number of unassigned objects per kind the sharder labelled with a shard, since it was elected.", []string{"kind"}, nil)
	sharderReassignedDesc = prometheus.NewDesc("operator_sharder_reassigned_total",
		"Total number of objects per kind the sharder moved from a dead shard to a live one, since it was elected.", []string{"kind"}, nil)
	sharderChildrenDesc = prometheus.NewDesc("operator_sharder_children_moved_total",
		"Total number of children per kind the sharder moved from a dead shard to the shard of their parent, since it was elected.", []string{"kind"}, nil)
	sharderConflictsDesc = prometheus.NewDesc("operator_sharder_conflicts_total",
		"Total number of the sharder's label writes per kind refused because the object had changed since it was read.", []string{"kind"}, nil)
)

// Describe implements prometheus.Collector.
func (c statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{reconcileTotalDesc, terminalErrorsDesc, panicsDesc, childAppliesDesc, prunesDesc, statusWritesDesc, objectsDesc,
		childDriftDesc, suspendedDesc, driftedDesc, rolloutStepDesc, rolloutInfoDesc,
		shardInfoDesc, handoversDesc, sharderAssignedDesc, sharderReassignedDesc, sharderChildrenDesc, sharderConflictsDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	sc, sharded := c.src.(ShardCounter)
	sharded = sharded && sc.Shard() != ""
	if sharded {
		ch <- prometheus.MustNewConstMetric(shardInfoDesc, prometheus.GaugeValue, 1, sc.Shard())
	}
	for _, gk := range c.src.Kinds() {
		s := c.src.Stats(gk)
		if s == nil {
			continue // stopped since Kinds
		}
		k := gk.String()
		terminal := s.Terminal.Load()
		counter(reconcileTotalDesc, s.Succeeded.Load(), k, ResultSuccess)
		counter(reconcileTotalDesc, s.Requeues.Load(), k, ResultRequeueAfter)
		counter(reconcileTotalDesc, s.RateLimited.Load()+terminal, k, ResultError)
		counter(terminalErrorsDesc, terminal, k)
		counter(panicsDesc, s.PanicsHandled.Load(), k)
		counter(childAppliesDesc, s.ChildApplies.Load(), k, ApplyWritten)
		counter(childAppliesDesc, s.ChildSkips.Load(), k, ApplySkipped)
		counter(prunesDesc, s.Pruned.Load(), k)
		counter(statusWritesDesc, s.StatusWrites.Load(), k)
		counter(childDriftDesc, s.DriftRepaired.Load(), k, DriftRepaired)
		counter(childDriftDesc, s.DriftReported.Load(), k, DriftReported)
		if cc, ok := c.src.(ConditionCounter); ok {
			n := cc.TrueConditions(gk, status.ConditionSuspended, status.ConditionDrifted)
			ch <- prometheus.MustNewConstMetric(suspendedDesc, prometheus.GaugeValue, float64(n[status.ConditionSuspended]), k)
			ch <- prometheus.MustNewConstMetric(driftedDesc, prometheus.GaugeValue, float64(n[status.ConditionDrifted]), k)
		}
		if rr, ok := c.src.(RolloutReader); ok {
			if step, steps, phase, from, to, ok := rr.Rollout(gk); ok {
				ch <- prometheus.MustNewConstMetric(rolloutStepDesc, prometheus.GaugeValue, float64(step), k, strconv.Itoa(steps))
				ch <- prometheus.MustNewConstMetric(rolloutInfoDesc, prometheus.GaugeValue, 1, k, phase, strconv.FormatInt(from, 10), strconv.FormatInt(to, 10))
			}
		}
		if sharded {
			counter(handoversDesc, s.HandedOver.Load(), k)
			if st, ok := sc.SharderStats(gk); ok {
				counter(sharderAssignedDesc, int64(st.Assigned), k)
				counter(sharderReassignedDesc, int64(st.Reassigned), k)
				counter(sharderChildrenDesc, int64(st.ChildrenMoved), k)
				counter(sharderConflictsDesc, int64(st.Conflicts), k)
			}
		}
		if oc, ok := c.src.(ObjectCounter); ok {
			for ready, n := range oc.Objects(gk) {
				if ready == "" {
					ready = "None"
				}
				ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(n), k, ready)
			}
		}
	}
}

// objectsDesc counts a kind's objects by their Ready condition, read from
// the watch's cache at scrape time: what a dashboard of Ready objects per
// kind needs, with no state of its own to drift.
var objectsDesc = prometheus.NewDesc("operator_objects",
	"Objects of each served kind, by the status of their Ready condition (True, False, Unknown, or None before the first reconcile).",
	[]string{"kind", "ready"}, nil)

// The process's metrics: client-go and reconcile take one of each.
var (
	defaultEngine    = newEngineMetrics()
	defaultWorkqueue = newWorkqueueMetrics()
	defaultREST      = newRESTMetrics()
	installOnce      sync.Once
)

// Install points client-go's workqueue and REST client metrics and the
// engine's reconcile.Observer at this package's metrics, once per process.
// Queues created before it report nothing: call it before the Manager
// starts its first kind. NewRegistry calls it.
func Install() {
	installOnce.Do(func() {
		defaultWorkqueue.install()
		defaultREST.install()
		reconcile.SetObserver(defaultEngine)
	})
}

// NewRegistry returns a registry of its own (not Prometheus's global one)
// with the Go and process collectors, the counters of src's kinds, the
// reconcile and render durations, client-go's workqueue and REST
// client metrics, what the Guards refused (operator_metrics_auth_*) and
// the conversion webhook's reviews (operator_conversion_*) and the
// storage migrations (operator_storage_migration*).
// It calls Install.
func NewRegistry(src Source) *prometheus.Registry {
	Install()
	return newRegistry(src, defaultEngine, defaultWorkqueue, defaultREST, defaultAuth, defaultConversion, defaultMigration)
}

func newRegistry(src Source, cs ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		statsCollector{src: src},
	)
	reg.MustRegister(cs...)
	return reg
}
