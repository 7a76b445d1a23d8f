package render

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestExpr: an expression prints over a copy of its dot, with the
// templates' functions, and fails as a render does: *Error located in
// the expression, a *BudgetError when its budget stops it.
func TestExpr(t *testing.T) {
	dot := func() map[string]any {
		return map[string]any{"metadata": map[string]any{"name": "d"}, "status": map[string]any{"phase": "Running", "list": []any{int64(1)}}}
	}
	cases := []struct {
		name, expr string
		budget     Budget
		want       string // printed, or a fragment of the error
		wantBudget string // BudgetError.Budget, if any
		wantErr    bool
	}{
		{name: "prints", expr: `{{ eq (dig "status" "phase" "" .) "Running" }}`, want: "true"},
		{name: "missing keys print nothing", expr: `a{{ .status.nothing }}b`, want: "ab"},
		{name: "nor do keys under them", expr: `a{{ .spec.nothing }}{{ if eq .spec.phase "x" }}x{{ end }}b`, want: "ab"},
		{name: "helm's functions", expr: `{{ toYaml .metadata }}`, want: "name: d"},
		{name: "the dot is a copy", expr: `{{ $_ := set .metadata "name" "changed" }}{{ .metadata.name }}`, want: "changed"},
		{name: "error located in the expression", expr: `{{ index .status.list 5 }}`, want: "readyWhen:1: ", wantErr: true},
		{name: "output budget", expr: `{{ repeat 2000 "x" }}`, budget: Budget{MaxOutputBytes: 1024},
			want: "repeat 2000 of 1 bytes", wantBudget: BudgetOutput, wantErr: true},
		{name: "time budget", expr: `{{ range 2000000000 }}{{ end }}`, budget: Budget{Timeout: 50 * time.Millisecond, MaxOutputBytes: 1 << 40},
			wantBudget: BudgetTime, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := ParseExpr("readyWhen", tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			in := dot()
			out, err := e.Eval(t.Context(), in, tc.budget)
			if !tc.wantErr {
				if err != nil || !strings.Contains(out, tc.want) {
					t.Errorf("Eval = %q, %v; want %q", out, err, tc.want)
				}
			} else if _, ok := errors.AsType[*Error](err); !ok || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Eval = %q, %v; want an *Error mentioning %q", out, err, tc.want)
			}
			if be, ok := errors.AsType[*BudgetError](err); tc.wantBudget != "" && (!ok || be.Budget != tc.wantBudget) {
				t.Errorf("err = %v, want a %s budget error", err, tc.wantBudget)
			}
			if in["metadata"].(map[string]any)["name"] != "d" {
				t.Error("Eval changed its dot")
			}
		})
	}
}

func TestParseExprErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"{{ if }}":           "readyWhen:1: missing value for if",
		"{{ nosuchfunc . }}": `readyWhen:1: function "nosuchfunc" not defined`,
		`{{ env "HOME" }}`:   `function "env" not defined`,
	} {
		_, err := ParseExpr("readyWhen", expr)
		if re, ok := errors.AsType[*Error](err); !ok || re.Template != "readyWhen" || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseExpr(%q) = %v, want an *Error %q", expr, err, want)
		}
	}
}

// TestExprRunaway: evaluations abandoned past their deadline are counted
// for the expression, whatever the value, and refuse new ones while
// maxRunaway still run.
func TestExprRunaway(t *testing.T) {
	e, err := ParseExpr("readyWhen", `{{ $k := genPrivateKey "rsa" }}{{ $k := genPrivateKey "rsa" }}{{ $k := genPrivateKey "rsa" }}`)
	if err != nil {
		t.Fatal(err)
	}
	b := Budget{Timeout: time.Millisecond}
	for i := range maxRunaway {
		_, err := e.Eval(t.Context(), map[string]any{"i": int64(i)}, b)
		if be, ok := errors.AsType[*BudgetError](err); !ok || be.Budget != BudgetTime || !strings.Contains(err.Error(), "abandoned") {
			if err == nil || ok && be.Budget == BudgetTime {
				t.Skipf("evaluation %d finished within its grace period (%v): nothing to abandon on this machine", i, err)
			}
			t.Fatalf("err = %v, want an abandoned time budget error", err)
		}
	}
	_, err = e.Eval(t.Context(), map[string]any{"other": "value"}, b)
	if be, ok := errors.AsType[*BudgetError](err); !ok || be.Budget != BudgetDegraded {
		t.Fatalf("err = %v, want the degraded refusal", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for e.set.Runaway() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := e.set.Runaway(); n != 0 {
		t.Fatalf("Runaway() = %d after the evaluations ended", n)
	}
}
