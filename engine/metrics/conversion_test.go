package metrics

import (
	"testing"
	"time"

	"github.com/tmplop/operator/engine/webhook"
)

// TestConversionMetrics: the webhook's reviews are counted per kind and
// result, their objects summed, their durations observed; and NewRegistry
// serves them.
func TestConversionMetrics(t *testing.T) {
	m := newConversionMetrics()
	reg := newRegistry(fakeSource{}, m)
	kind := memcached.String()
	m.ObserveConversion(kind, webhook.ResultSuccess, 1000, 20*time.Millisecond)
	m.ObserveConversion(kind, webhook.ResultSuccess, 3, time.Millisecond)
	m.ObserveConversion(kind, webhook.ResultFailure, 10, time.Millisecond)
	m.ObserveConversion("", webhook.ResultInvalid, 0, time.Microsecond)
	cases := []struct {
		metric string
		labels map[string]string
		want   float64
	}{
		{"operator_conversion_reviews_total", map[string]string{"kind": kind, "result": "success"}, 2},
		{"operator_conversion_reviews_total", map[string]string{"kind": kind, "result": "failure"}, 1},
		{"operator_conversion_reviews_total", map[string]string{"kind": "", "result": "invalid"}, 1},
		{"operator_conversion_objects_total", map[string]string{"kind": kind, "result": "success"}, 1003},
		{"operator_conversion_objects_total", map[string]string{"kind": kind, "result": "failure"}, 10},
		{"operator_conversion_duration_seconds", map[string]string{"kind": kind, "result": "success"}, 2},
	}
	for _, tc := range cases {
		if got := sample(t, reg, tc.metric, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.metric, tc.labels, got, tc.want)
		}
	}
	if got := histogramSum(t, reg, "operator_conversion_duration_seconds", map[string]string{"kind": kind, "result": "success"}); got < 0.0209 || got > 0.0211 {
		t.Errorf("conversion seconds sum = %v, want 0.021", got)
	}
	// The process's observer is the one NewRegistry serves.
	ConversionObserver().ObserveConversion(kind, webhook.ResultSuccess, 1, time.Millisecond)
	if got := sample(t, NewRegistry(fakeSource{}), "operator_conversion_reviews_total", map[string]string{"kind": kind, "result": "success"}); got < 1 {
		t.Errorf("NewRegistry's operator_conversion_reviews_total = %v, want at least 1", got)
	}
}
