package render

import (
	"errors"
	"testing"
	"time"
)

// TestSpent: a render starts with what work done for it before spent
// (Input.Spent, a chart's values): the time is gone from its deadline, the
// bytes from its output budget, and a render with nothing left is refused
// before it starts, naming the whole budget.
func TestSpent(t *testing.T) {
	slow := mustParse(t, map[string]string{
		"slow.yaml": "{{ range until 50 }}{{ $_ := genPrivateKey \"rsa\" }}{{ end }}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slow\n",
	})
	big := mustParse(t, map[string]string{
		"big.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  v: {{ repeat 3000 \"x\" | quote }}\n",
	})
	cases := []struct {
		name   string
		set    *Set
		budget Budget
		spent  Spent
		want   string // the budget that stops it
		limit  int64  // the limit it names: the whole budget
		within time.Duration
	}{
		{name: "time spent: the deadline comes sooner", set: slow, budget: Budget{Timeout: 1500 * time.Millisecond},
			spent: Spent{Time: 1200 * time.Millisecond}, want: BudgetTime, limit: int64(1500 * time.Millisecond), within: 1200 * time.Millisecond},
		{name: "all the time spent", set: big, budget: Budget{Timeout: time.Second},
			spent: Spent{Time: 2 * time.Second}, want: BudgetTime, limit: int64(time.Second), within: 50 * time.Millisecond},
		{name: "the output spent but what the render needs", set: big, budget: Budget{MaxOutputBytes: 64 << 10},
			spent: Spent{Bytes: 64<<10 - 1000}, want: BudgetOutput, limit: 64 << 10, within: time.Second},
		{name: "more than the output spent", set: big, budget: Budget{MaxOutputBytes: 64 << 10},
			spent: Spent{Bytes: 1 << 20}, want: BudgetOutput, limit: 64 << 10, within: 50 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := tc.set.Children(t.Context(), Input{Object: map[string]any{}, Budget: tc.budget, Spent: tc.spent})
			took := time.Since(start)
			var be *BudgetError
			if !errors.As(err, &be) || be.Budget != tc.want || be.Limit != tc.limit {
				t.Fatalf("got %v, want the %s budget of %d", err, tc.want, tc.limit)
			}
			if took > tc.within {
				t.Errorf("stopped after %s, want within %s", took, tc.within)
			}
		})
	}
	// Nothing spent: the same renders fit.
	if _, err := big.Children(t.Context(), Input{Object: map[string]any{}, Budget: Budget{MaxOutputBytes: 64 << 10}}); err != nil {
		t.Errorf("with nothing spent: %v", err)
	}
}
