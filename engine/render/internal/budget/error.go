package budget

import (
	"fmt"
	"time"

	"github.com/tmplop/operator/engine/requeue"
)

// Names of the budgets, as Error.Budget reports them (render exports them
// as BudgetTime, BudgetOutput...).
const (
	Time      = "time"
	Output    = "output"
	Manifests = "manifests"
	Calls     = "calls"
	Depth     = "depth"
	Canceled  = "canceled"
	Degraded  = "degraded"
	// Work is one function call that would run too long to be stopped: a
	// deadline is only checked between calls, so a call that compares
	// every pair of a list (uniq, without) or runs a large regular
	// expression over a long string is refused past a fixed number of
	// steps, whatever is left of the time budget. It depends on the input
	// alone.
	Work = "work"
)

// Error is a render stopped by its budget (render.BudgetError).
type Error struct {
	Budget string // one of the budget names
	Limit  int64  // the limit that was hit (bytes, manifests, calls, nanoseconds)
	Detail string // what hit it, e.g. "until 200000000"
}

func (e *Error) Error() string {
	var msg string
	switch e.Budget {
	case Time:
		msg = fmt.Sprintf("render budget exceeded: time (%s)", time.Duration(e.Limit))
	case Output:
		msg = fmt.Sprintf("render budget exceeded: output (%d bytes)", e.Limit)
	case Manifests:
		msg = fmt.Sprintf("render budget exceeded: manifests (%d)", e.Limit)
	case Calls:
		msg = fmt.Sprintf("render budget exceeded: calls (%d include, tpl and template calls)", e.Limit)
	case Depth:
		msg = fmt.Sprintf("render budget exceeded: depth (%d nested include, tpl and template calls; recursion?)", e.Limit)
	case Canceled:
		msg = "render canceled"
	case Work:
		msg = fmt.Sprintf("render budget exceeded: work (%d steps in one function call)", e.Limit)
	case Degraded:
		msg = fmt.Sprintf("render refused: %d renders of this object are still running past their time budget", e.Limit)
	default:
		msg = "render budget exceeded: " + e.Budget
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// timeRetry is when a render that ran out of time is tried again: the
// machine may have been busy, but a template that loops must not take a
// worker's CPU every few milliseconds.
const timeRetry = time.Minute

// RequeueMark says what retrying a render stopped by its budget can do:
// output, manifests, calls, depth and work are a function of the input
// (terminal); time depends on the machine's load (terminal, tried again
// after a minute); a canceled render and the degraded refusal pass
// (retried with backoff).
func (e *Error) RequeueMark() requeue.Mark {
	switch e.Budget {
	case Canceled, Degraded:
		return requeue.Mark{Cause: requeue.CauseRender}
	case Time:
		return requeue.Mark{Cause: requeue.CauseRender, Terminal: true, After: timeRetry}
	}
	return requeue.Mark{Cause: requeue.CauseRender, Terminal: true}
}

// TooMuchWork refuses a call that would take more than limit steps.
func TooMuchWork(steps, limit int64, detail func() string) error {
	if steps <= limit && steps >= 0 {
		return nil
	}
	return &Error{Budget: Work, Limit: limit, Detail: detail()}
}
