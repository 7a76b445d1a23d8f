package reconcile

import (
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Observer is told what the Stats counters cannot hold: how long
// reconciles and renders take, and why reconciles fail. engine/metrics
// implements it; this package stays free of any metrics library. Its
// methods are called on the workers' hot path and must not block.
type Observer interface {
	// ObserveReconcile: one key of kind was handled, taking d, from the
	// moment a worker took it off the queue to its result.
	ObserveReconcile(kind schema.GroupKind, d time.Duration)
	// ObserveRender: one render of kind's templates took d; phase is
	// RenderChildren or RenderStatus.
	ObserveRender(kind schema.GroupKind, phase string, d time.Duration)
	// ObserveFailure: a reconcile of kind failed and reported reason on
	// its object, a reason of the Reconciled condition (engine/status)
	// as classify chose it: a small closed set, never an object's name.
	ObserveFailure(kind schema.GroupKind, reason string)
}

// The phases of ObserveRender.
const (
	RenderChildren = "children"
	RenderStatus   = "status"
)

var observer atomic.Pointer[Observer]

// SetObserver makes o the process's observer; nil: none.
func SetObserver(o Observer) {
	if o == nil {
		observer.Store(nil)
		return
	}
	observer.Store(&o)
}

func observed() Observer {
	if p := observer.Load(); p != nil {
		return *p
	}
	return nil
}

// ObserveReconcile tells the observer, if any, that one key of kind was
// handled in d. The controller, which times the whole handling, calls it.
func ObserveReconcile(kind schema.GroupKind, d time.Duration) {
	if o := observed(); o != nil {
		o.ObserveReconcile(kind, d)
	}
}

// observeRender tells the observer, if any, how long a render took since start.
func observeRender(kind schema.GroupKind, phase string, start time.Time) {
	if o := observed(); o != nil {
		o.ObserveRender(kind, phase, time.Since(start))
	}
}

func observeFailure(kind schema.GroupKind, reason string) {
	if o := observed(); o != nil {
		o.ObserveFailure(kind, reason)
	}
}
