// Package metricstest reads the operator's Prometheus series in tests: from
// a registry (engine/metrics' unit tests) or from a scrape of /metrics
// (test/e2e, test/incluster), a series is picked by the labels it has.
//
// It is test support: only _test.go files import it.
package metricstest

import (
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Series returns the series of mf whose labels include every one of
// labels (nil: all of them), in mf's order.
func Series(mf *dto.MetricFamily, labels map[string]string) []*dto.Metric {
	var out []*dto.Metric
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// Total sums the series of mf whose labels include labels: counter and
// gauge values, histogram counts.
func Total(mf *dto.MetricFamily, labels map[string]string) float64 {
	var sum float64
	for _, m := range Series(mf, labels) {
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return sum
}

// Parse reads a /metrics body in the text format, by family name.
func Parse(body string) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(strings.NewReader(body))
}
