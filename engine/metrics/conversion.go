package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tmplop/operator/engine/webhook"
)

// Buckets of operator_conversion_duration_seconds: a review of one object
// takes well under a millisecond beyond its render, a list of thousands
// up to the API server's timeout of a conversion (30 s).
var conversionBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// conversionMetrics count the conversion webhook's reviews
// (webhook.Observer). The kind label is a served kind's GroupKind, or ""
// for a review of no kind the operator converts: a caller of the webhook
// cannot grow the label set.
type conversionMetrics struct {
	reviews  *prometheus.CounterVec
	objects  *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

var (
	_ webhook.Observer     = (*conversionMetrics)(nil)
	_ prometheus.Collector = (*conversionMetrics)(nil)
)

func newConversionMetrics() *conversionMetrics {
	return &conversionMetrics{
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "operator_conversion_reviews_total",
			Help: "Total number of ConversionReviews the conversion webhook answered, per kind, by result: success, failure (the conversion refused the list) or invalid (not a review of a kind it converts).",
		}, []string{"kind", "result"}),
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "operator_conversion_objects_total",
			Help: "Total number of objects in the ConversionReviews the conversion webhook answered, per kind, by result.",
		}, []string{"kind", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "operator_conversion_duration_seconds",
			Help:    "Length of time per ConversionReview, from its request's headers to its answer, per kind and result.",
			Buckets: conversionBuckets,
		}, []string{"kind", "result"}),
	}
}

// defaultConversion is the process's: the webhook reports into it
// (ConversionObserver), NewRegistry serves it.
var defaultConversion = newConversionMetrics()

// ConversionObserver is what the conversion webhook reports to
// (webhook.Options.Observer); NewRegistry serves its series.
func ConversionObserver() webhook.Observer { return defaultConversion }

// ObserveConversion implements webhook.Observer.
func (m *conversionMetrics) ObserveConversion(kind, result string, objects int, d time.Duration) {
	m.reviews.WithLabelValues(kind, result).Inc()
	m.objects.WithLabelValues(kind, result).Add(float64(objects))
	m.duration.WithLabelValues(kind, result).Observe(d.Seconds())
}

// Describe implements prometheus.Collector.
func (m *conversionMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.reviews.Describe(ch)
	m.objects.Describe(ch)
	m.duration.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *conversionMetrics) Collect(ch chan<- prometheus.Metric) {
	m.reviews.Collect(ch)
	m.objects.Collect(ch)
	m.duration.Collect(ch)
}
