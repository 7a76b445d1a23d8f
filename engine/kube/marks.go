package kube

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tmplop/operator/engine/requeue"
)

// forbiddenRetry is when a kind whose account was refused a request tries
// again: no event tells that an administrator granted the missing rights,
// and growing backoff would leave the fix unseen for a quarter of an hour.
const forbiddenRetry = time.Minute

// Forbidden is a request the API server refused for want of rights (RBAC:
// the operator's, or the account's a kind impersonates), marked where it
// comes back. It is still the API server's *StatusError for every reader
// (apierrors.IsForbidden, HasStatusCause: a namespace being deleted
// refuses new objects as Forbidden too).
type Forbidden struct{ *apierrors.StatusError }

// Unwrap returns the API server's error.
func (e Forbidden) Unwrap() error { return e.StatusError }

// RequeueMark: terminal, tried again after a minute.
func (e Forbidden) RequeueMark() requeue.Mark {
	return requeue.Mark{Cause: requeue.CauseStep, Terminal: true, After: forbiddenRetry}
}

// marked marks the errors of a call that retrying with backoff cannot fix.
func marked[T any](v T, err error) (T, error) {
	if se, ok := err.(*apierrors.StatusError); ok && apierrors.IsForbidden(se) {
		return v, Forbidden{se}
	}
	return v, err
}
