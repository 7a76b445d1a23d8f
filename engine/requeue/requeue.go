// Package requeue marks a failure, at the place that knows, with what
// retrying it can do, as controller-runtime's TerminalError and kro's
// requeue types do: reconcile's classify reads only these marks, never the
// error's type or text.
//
//	render, ownership, kube (the door), reconcile's steps: mark
//	  -> reconcile.classify: the condition's reason, terminal or not, when
//	  -> controller: rate-limited retry, or none, or a fixed delay
//
// It imports nothing of the engine, so that every step can mark.
package requeue

import (
	"errors"
	"time"
)

// Cause is what a failure is about, which names the object's condition
// reason (reconcile maps it).
type Cause int

const (
	// CauseStep is a failure of the step itself (an API error on apply or
	// status): the step names the reason.
	CauseStep Cause = iota
	// CauseRender is a template, a budget or a refusal of what a template
	// asked for (a lookup, a child outside its bounds).
	CauseRender
	// CauseLookup is a read that may pass: a cache not synced, a kind not
	// served yet.
	CauseLookup
	// CauseOwnership is a child's name held by an object that is not the
	// parent's.
	CauseOwnership
)

// Mark is what retrying a failure can do.
type Mark struct {
	Cause Cause
	// Terminal failures are not retried with backoff: the same input fails
	// the same way. They are tried again when the object, its folder or
	// what it waits for changes, or After later when After is set.
	Terminal bool
	After    time.Duration
}

// Marker is an error that knows its Mark.
type Marker interface {
	error
	RequeueMark() Mark
}

// Of returns the mark of the first Marker in err's chain.
func Of(err error) (Mark, bool) {
	if m, ok := errors.AsType[Marker](err); ok {
		return m.RequeueMark(), true
	}
	return Mark{}, false
}

// With marks err.
func With(err error, m Mark) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, mark: m}
}

type marked struct {
	err  error
	mark Mark
}

func (e *marked) Error() string     { return e.err.Error() }
func (e *marked) Unwrap() error     { return e.err }
func (e *marked) RequeueMark() Mark { return e.mark }
