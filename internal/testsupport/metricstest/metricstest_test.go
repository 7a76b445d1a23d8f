package metricstest

import "testing"

const scrape = `# HELP operator_reconciles_total Reconciles.
# TYPE operator_reconciles_total counter
operator_reconciles_total{kind="AppService",result="ok"} 7
operator_reconciles_total{kind="AppService",result="error"} 2
operator_reconciles_total{kind="Memcached",result="ok"} 5
# HELP operator_objects Objects.
# TYPE operator_objects gauge
operator_objects{kind="AppService",ready="true"} 3
# HELP operator_reconcile_seconds Reconcile time.
# TYPE operator_reconcile_seconds histogram
operator_reconcile_seconds_bucket{kind="AppService",le="0.1"} 8
operator_reconcile_seconds_bucket{kind="AppService",le="+Inf"} 9
operator_reconcile_seconds_sum{kind="AppService"} 0.4
operator_reconcile_seconds_count{kind="AppService"} 9
`

func TestParseSeriesTotal(t *testing.T) {
	families, err := Parse(scrape)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		family string
		labels map[string]string
		series int
		total  float64
	}{
		{"operator_reconciles_total", nil, 3, 14},
		{"operator_reconciles_total", map[string]string{"kind": "AppService"}, 2, 9},
		{"operator_reconciles_total", map[string]string{"kind": "AppService", "result": "ok"}, 1, 7},
		{"operator_reconciles_total", map[string]string{"kind": "Nothing"}, 0, 0},
		{"operator_objects", map[string]string{"ready": "true"}, 1, 3},
		{"operator_reconcile_seconds", map[string]string{"kind": "AppService"}, 1, 9},
	}
	for _, tt := range tests {
		mf := families[tt.family]
		if mf == nil {
			t.Fatalf("no family %s in the scrape", tt.family)
		}
		if got := len(Series(mf, tt.labels)); got != tt.series {
			t.Errorf("%s %v: %d series, want %d", tt.family, tt.labels, got, tt.series)
		}
		if got := Total(mf, tt.labels); got != tt.total {
			t.Errorf("%s %v: total %v, want %v", tt.family, tt.labels, got, tt.total)
		}
	}
	if _, err := Parse("operator_objects{kind=\n"); err == nil {
		t.Error("a broken scrape parsed")
	}
}
