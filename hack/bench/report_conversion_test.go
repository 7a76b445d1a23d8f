package main

import (
	"math"
	"strings"
	"testing"
)

// TestConversionFigures: the per-object figures are of the medians, and
// the goal holds when the LIST's difference an object is at most the
// render's.
func TestConversionFigures(t *testing.T) {
	r := &conversionRun{N: 1000,
		NoneSeconds: []float64{0.030, 0.040, 0.032}, WebhookSeconds: []float64{0.045, 0.036, 0.090},
		NoneWarmSeconds: []float64{0.03}, WebhookWarmSeconds: []float64{0.03},
		WriteNoneSeconds: []float64{1.5, 1.7}, WriteWebhookSeconds: []float64{2.4, 2.2},
		RenderSeconds: []float64{0.090, 0.070, 0.080}, RenderOneSeconds: []float64{0.12},
		WebhookCalls: 10000, WebhookCallSeconds: 25,
	}
	f := figuresOf(r)
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
	near("listPerObject", f.listPerObject, (0.045-0.032)/1000)
	near("writePerObject", f.writePerObject, (2.3-1.6)/1000)
	near("renderPerObject", f.renderPerObject, 0.080/1000)
	near("callsPerWrite", f.callsPerWrite, 5)
	near("callSeconds", f.callSeconds, 0.0025)
	if !f.withinGoal() {
		t.Error("13 us an object over a render of 80 us: not within the goal")
	}
	r.WebhookSeconds = []float64{0.2, 0.2, 0.2}
	if figuresOf(r).withinGoal() {
		t.Error("168 us an object over a render of 80 us: within the goal")
	}
	md := string(conversionMarkdown(&conversionReport{Runs: 3, Results: []*conversionRun{r, {N: 10, Error: "boom\nline"}}}))
	for _, want := range []string{"| 1,000 | 32.0 ms (30.0-40.0) | 200.0 ms (200.0-200.0) | 168.0 us |", "| 10 | error: boom line |", "| 5.00 | 2.50 ms |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report has no %q:\n%s", want, md)
		}
	}
}
