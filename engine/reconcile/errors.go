package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/requeue"
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

// ErrNotReady is a failure that will pass by itself (a cache not synced
// yet): it is retried with backoff.
var ErrNotReady = requeue.With(errors.New("not ready yet, will retry"), requeue.Mark{Cause: requeue.CauseLookup})

// stageError names the step of the reconcile that failed, for the reason.
type stageError struct {
	reason string
	err    error
}

func (e *stageError) Error() string { return e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

func failed(reason string, err error) error { return &stageError{reason: reason, err: err} }

// classify is the one place that decides what a failure is: its reason on
// the object, and whether retrying can help. It reads only the marks that
// the places that fail set (engine/requeue): a template, a render budget,
// a refusal of what a template asked for, an ownership conflict, a refused
// request (kube's Forbidden) say what retrying them can do. An unmarked
// failure (an API error, a discovery failure, a kind not served yet) is
// retried with backoff, under the reason of the step that failed.
func classify(err error) (reason string, terminal bool, retryAfter time.Duration) {
	reason = status.ReasonApplyFailed
	if se, ok := errors.AsType[*stageError](err); ok {
		reason = se.reason
	}
	m, ok := requeue.Of(err)
	if !ok {
		return reason, false, 0
	}
	switch m.Cause {
	case requeue.CauseRender:
		reason = status.ReasonRenderFailed
	case requeue.CauseLookup:
		reason = status.ReasonLookupFailed
	case requeue.CauseOwnership:
		reason = status.ReasonOwnershipConflict
	}
	return reason, m.Terminal, m.After
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
	if c := r.resumed(obj); c != nil {
		conds = append(conds, *c)
	}
	if werr := r.writeStatus(ctx, obj, nil, conds); werr != nil {
		return fmt.Errorf("%s: %w (and the condition could not be written: %v)", reason, err, werr)
	}
	err = fmt.Errorf("%s: %w", reason, err)
	if terminal {
		return &TerminalError{Err: err, RetryAfter: retryAfter}
	}
	return err
}

// RevisionUnavailable reports on obj, as any failed reconcile, that the
// revision of the folder its kind's rollout gives it cannot be served
// (engine/controller compiles an older revision from its record): nothing
// is rendered or applied, so its children stay as the last good revision
// left them. err's mark, if any, says whether retrying soon can help.
func (r *Reconciler) RevisionUnavailable(ctx context.Context, obj *unstructured.Unstructured, err error) error {
	return r.fail(ctx, obj, failed(status.ReasonRevisionUnavailable, err))
}

func containsPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }
