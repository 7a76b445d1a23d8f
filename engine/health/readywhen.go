package health

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/render"
)

// An expression is the folder author's, like a template, but it runs on
// every change of every child of its kind: it must stay small and fast.
// It is evaluated as a render is (render.Expr): on a worker, with the
// templates' functions, under a budget, abandoned past its deadline, and
// refused while two evaluations of it still run abandoned (a loop in an
// expression may hold a CPU, not every CPU).
const (
	// maxOutput bounds what an expression prints: the message of a child
	// that is not ready.
	maxOutput = 1024
	timeout   = time.Second
)

// budget is every evaluation's: its time, and the render's defaults for
// what it may produce, so that any child the API server holds can be
// printed or copied.
var budget = render.Budget{Timeout: timeout}

// name is the template an expression is parsed as, which errors name.
const exprName = "readyWhen"

// Parse checks a readyWhen expression: a Go template over the child.
func Parse(expression string) error {
	_, err := parse(expression)
	return err
}

type rule struct{ expr *render.Expr }

func parse(expression string) (*rule, error) {
	if strings.TrimSpace(expression) == "" {
		return nil, errors.New("expression is empty")
	}
	e, err := render.ParseExpr(exprName, expression)
	if err != nil {
		// As text/template names it: "template: readyWhen:1: ...".
		return nil, fmt.Errorf("template: %w", err)
	}
	return &rule{expr: e}, nil
}

// eval renders the expression over a copy of obj: true is Current, any
// other output InProgress (with the output as the message), an error
// Unknown.
func (r *rule) eval(obj *unstructured.Unstructured) Result {
	out, err := r.expr.Eval(context.Background(), obj.Object, budget)
	if err == nil && len(out) > maxOutput {
		err = fmt.Errorf("output over %d bytes", maxOutput)
	}
	if err != nil {
		return Result{Status: Unknown, Reason: "ReadyWhenFailed", Message: "readyWhen: " + failure(err)}
	}
	out = strings.TrimSpace(out)
	if out == "true" {
		return Result{Status: Current, Message: "readyWhen is true"}
	}
	if out == "" {
		out = "readyWhen printed nothing"
	}
	return Result{Status: InProgress, Reason: "ReadyWhenNotTrue", Message: out}
}

// failure says why an evaluation failed: the budgets of time and runaway
// evaluations in readyWhen's own words, anything else as the render says
// it, located in the expression.
func failure(err error) string {
	be, ok := errors.AsType[*render.BudgetError](err)
	switch {
	case !ok:
	case be.Budget == render.BudgetTime:
		return fmt.Sprintf("did not finish within %s", time.Duration(be.Limit))
	case be.Budget == render.BudgetDegraded:
		return fmt.Sprintf("%d earlier evaluations are still running past their deadline", be.Limit)
	}
	return err.Error()
}
