package reconcile

import "sync/atomic"

// Stats counts a kind's reconciles and writes, for tests and metrics. A nil
// *Stats counts nothing.
type Stats struct {
	Reconciles   atomic.Int64
	Failures     atomic.Int64
	ChildApplies atomic.Int64 // child applies sent to the API server
	ChildSkips   atomic.Int64 // child applies skipped: the child was already as rendered
	Pruned       atomic.Int64
	StatusWrites atomic.Int64
	ParentWrites atomic.Int64 // finalizer and prune-hold writes on parents
	// NonDeterministic counts reconciles that found a child rendering
	// differently from the same input, and left it as it was.
	NonDeterministic atomic.Int64
	Requeues         atomic.Int64 // timed requeues asked by templates (requeueAfter)
	RateLimited      atomic.Int64 // retries after a failure
	PanicsHandled    atomic.Int64
	// Succeeded and Terminal complete the controller's results with
	// Requeues and RateLimited: keys handled with no error and no requeue,
	// and failures not retried with backoff (TerminalError).
	Succeeded atomic.Int64
	Terminal  atomic.Int64
	// HandedOver counts the objects this replica's shard handed over to
	// another shard (run --sharding): its moves out.
	HandedOver atomic.Int64
	// SuspendedReconciles counts the reconciles that found their object
	// suspended, and wrote nothing but its Suspended condition.
	SuspendedReconciles atomic.Int64
	// DriftRepaired counts drifted children applied again (kind.yaml
	// drift: repair); DriftReported the drifted children reported in a
	// new Drifted condition and its Event (drift: warn), once per change.
	DriftRepaired atomic.Int64
	DriftReported atomic.Int64
}

func (s *Stats) add(c *atomic.Int64) {
	if s != nil {
		c.Add(1)
	}
}

func (s *Stats) applied(skipped bool) {
	if s == nil {
		return
	}
	if skipped {
		s.ChildSkips.Add(1)
	} else {
		s.ChildApplies.Add(1)
	}
}

// Writes is every write request the kind made.
func (s *Stats) Writes() int64 {
	return s.ChildApplies.Load() + s.Pruned.Load() + s.StatusWrites.Load() + s.ParentWrites.Load()
}

// Add counts one event on c; safe on a nil *Stats.
func (s *Stats) Add(c func(*Stats) *atomic.Int64) {
	if s != nil {
		c(s).Add(1)
	}
}
