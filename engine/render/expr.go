package render

import (
	"context"
	"fmt"
	"text/template"
)

// Expr is one expression evaluated over a value, such as kind.yaml's
// readyWhen over a live child: a template of its own, with the functions
// of the folder's templates, run as every render is run (on a worker,
// held to a Budget, abandoned past its deadline).
//
// An Expr is immutable after parsing and safe for concurrent use.
type Expr struct {
	set  *Set
	name string
}

// exprKey is the one key the runaway evaluations of an expression are
// counted under: its author wrote it for every value it judges, so while
// maxRunaway evaluations still run abandoned, every value is refused.
const exprKey = "expression"

// ParseExpr parses text as a template named name, with the functions
// templates have (Helm's and sprig's, bounded; no env). Errors are *Error
// located in name.
//
// Unlike the folder's templates (missingkey=zero), a missing key reads as
// text/template's default, no value: `.status.phase` of a child without
// status prints nothing, where a template would fail on a nil map. A
// readyWhen written against a child that has no status yet must judge it
// not ready, not fail.
func ParseExpr(name, text string) (*Expr, error) {
	s := newSet()
	if _, err := s.tmpl.New(name).Parse(text); err != nil {
		return nil, parseError(name, err)
	}
	s.files[name] = struct{}{}
	for _, t := range s.tmpl.Templates() {
		guardTree(t.Tree, s.scalar)
	}
	return &Expr{set: s, name: name}, nil
}

// Eval executes e with a deep copy of dot as the dot (sprig's set and
// merge change maps in place), under b, and returns what it printed,
// "<no value>" removed. It returns within b's timeout plus a grace period
// whatever the expression does, and soon after ctx is canceled. Errors are
// *Error; one that the budget stopped wraps a *BudgetError
// (BudgetDegraded while earlier evaluations still run past their
// deadline).
func (e *Expr) Eval(ctx context.Context, dot map[string]any, b Budget) (string, error) {
	if err := e.set.degraded(exprKey); err != nil {
		return "", err
	}
	data, err := copyJSONMap(dot)
	if err != nil {
		return "", &Error{Message: fmt.Sprintf("input object: %v", err), err: err}
	}
	// Written by the render's goroutine before it sends its outcome, read
	// only once runWith has received it: never once the render is
	// abandoned.
	var out string
	_, err = e.set.runWith(ctx, exprKey, Input{Budget: b}, data, func(r *render) (*Result, error) {
		printed, err := r.execute(e.name)
		if err != nil {
			return nil, err
		}
		out = string(printed)
		return &Result{}, nil
	})
	if err != nil {
		return "", err
	}
	return out, nil
}

// newSet is an empty set with the templates' functions and the given
// text/template options, to parse into.
func newSet(options ...string) *Set {
	funcs, scalar := parseFuncs()
	return &Set{
		tmpl:   template.New(rootName).Option(options...).Funcs(funcs),
		files:  map[string]struct{}{},
		scalar: scalar,
		free:   make(chan *instance, freeInstances),
	}
}
