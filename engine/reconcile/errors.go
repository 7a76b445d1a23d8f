package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/status"
)

// TerminalError is a failure that retrying with backoff cannot fix: it is
// reported on the object and retried when the object, its templates or
// what it waits for change, or after RetryAfter when that is set.
type TerminalError struct {
	Err        error
	RetryAfter time.Duration
}

func (e *TerminalError) Error() string { return e.Err.Error() }
func (e *TerminalError) Unwrap() error { return e.Err }

// ErrNotReady marks a failure that will pass by itself (a cache not synced
// yet): it is retried with backoff.
var ErrNotReady = errors.New("not ready yet, will retry")

// timeRetry is when a render that ran out of time is tried again: the
// machine may have been busy, but a template that loops must not take a
// worker's CPU every few milliseconds.
const timeRetry = time.Minute

// conflictRetry is when a parent that found its child taken looks again,
// if no change of the occupant woke it before.
const conflictRetry = 5 * time.Minute

// forbiddenRetry is when a kind whose account was refused a request tries
// again: no event tells that an administrator granted the missing rights,
// and growing backoff would leave the fix unseen for a quarter of an hour.
const forbiddenRetry = time.Minute

// stageError names the step of the reconcile that failed, for the reason.
type stageError struct {
	reason string
	err    error
}

func (e *stageError) Error() string { return e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

func failed(reason string, err error) error { return &stageError{reason: reason, err: err} }

// classify is the one place that decides what a failure is: its reason on
// the object, and whether retrying can help. Only known-permanent causes
// are terminal: template errors, render budgets that depend on the input
// alone, containment refusals, refused lookups and ownership conflicts.
// Everything else (a cache not synced, a discovery failure, an API error,
// a kind not served yet) is retried with backoff.
func classify(err error) (reason string, terminal bool, retryAfter time.Duration) {
	reason = status.ReasonApplyFailed
	if se, ok := errors.AsType[*stageError](err); ok {
		reason = se.reason
	}
	if ce, ok := errors.AsType[*ownership.ConflictError](err); ok && ce != nil {
		// The occupant's changes wake the parent (Reconciler.WaitFor); the
		// slow retry is a safety net for an event missed.
		return status.ReasonOwnershipConflict, true, conflictRetry
	}
	if be, ok := errors.AsType[*render.BudgetError](err); ok {
		switch be.Budget {
		case render.BudgetTime:
			return status.ReasonRenderFailed, true, timeRetry
		case render.BudgetDegraded, render.BudgetCanceled:
			return status.ReasonRenderFailed, false, 0
		}
		return status.ReasonRenderFailed, true, 0
	}
	if errors.Is(err, render.ErrLookupRefused) {
		return status.ReasonRenderFailed, true, 0
	}
	if _, ok := errors.AsType[*render.LookupError](err); ok || errors.Is(err, ErrNotReady) {
		return status.ReasonLookupFailed, false, 0
	}
	if apierrors.IsForbidden(err) {
		// RBAC (the operator's, or the ServiceAccount's that the kind
		// impersonates) refused it: the message names the verb and resource.
		return reason, true, forbiddenRetry
	}
	if IsPlanError(err) {
		return status.ReasonRenderFailed, true, 0
	}
	if _, ok := errors.AsType[*render.Error](err); ok {
		return status.ReasonRenderFailed, true, 0
	}
	return reason, false, 0
}

// fail reports err on obj as the Reconciled condition (with Ready=False,
// and Stalled=True when terminal or Reconciling=True when retried) and a
// Warning Event, keeping the rest of the status as it was, and returns the
// error for the controller, classified. A reconcile canceled by shutdown
// reports nothing.
func (r *Reconciler) fail(ctx context.Context, obj *unstructured.Unstructured, err error) error {
	if ctx.Err() != nil {
		return err
	}
	reason, terminal, retryAfter := classify(err)
	r.Stats.add(&r.Stats.Failures)
	observeFailure(r.Kind.GVK.GroupKind(), reason)
	msg := err.Error()
	if re, ok := errors.AsType[*render.Error](err); ok && re.Template != "" && !containsPrefix(msg, re.Template) {
		msg = re.Error()
	}
	klog.FromContext(ctx).Info("Reconcile failed", "reason", reason, "message", msg, "retry", !terminal || retryAfter > 0)
	r.Recorder.Event(obj, corev1.EventTypeWarning, reason, msg)
	conds := append([]metav1.Condition{status.Reconciled(reason, msg, obj.GetGeneration())}, failure(reason, msg, terminal, obj.GetGeneration())...)
	if werr := r.writeStatus(ctx, obj, nil, conds); werr != nil {
		return fmt.Errorf("%s: %w (and the condition could not be written: %v)", reason, err, werr)
	}
	err = fmt.Errorf("%s: %w", reason, err)
	if terminal {
		return &TerminalError{Err: err, RetryAfter: retryAfter}
	}
	return err
}

func containsPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }
