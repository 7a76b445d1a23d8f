package render

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Budget bounds one render (one call of Children or Status). Template
// folders are written by people who make mistakes, and tpl renders strings
// that tenants may write, so no render may run, allocate or recurse without
// bound: a budget hit is an *Error wrapping a *BudgetError, never a crash.
//
// Zero fields take the defaults below.
type Budget struct {
	// Timeout is the wall time of the render. Every loop iteration,
	// include, tpl and function call checks it, and a render that still
	// runs Timeout plus a grace period later is abandoned (see Set.Runaway).
	Timeout time.Duration `json:"timeout,omitempty"`
	// MaxOutputBytes bounds what the render produces, counted where it is
	// produced: template output, include and tpl results, every string a
	// function returns, every list or map it builds (what it allocates: 8
	// bytes an int, 16 an element, 64 a map entry), the copies lookup and
	// deepCopy make, what decoding (fromYaml) and compiling a regular
	// expression allocate, and range iterations (16 bytes, and 16 for each
	// command of the body: a part of what text/template allocates to
	// evaluate them). A function refuses before it allocates what would not
	// fit. A template that doubles a string or a list in a loop hits it
	// after a few dozen steps, long before memory runs out; what a render
	// allocates in all stays within a small multiple of it (FuzzFuncAlloc).
	MaxOutputBytes int64 `json:"maxOutputBytes,omitempty"`
	// MaxManifests bounds the child manifests of one object.
	MaxManifests int `json:"maxManifests,omitempty"`
	// MaxCalls bounds the template executions of one render: include, tpl
	// and {{ template }} calls. Exponential fan-out (a helper that includes
	// another twice, ten levels deep) hits it in milliseconds.
	MaxCalls int `json:"maxCalls,omitempty"`
}

// Defaults of a Budget, chosen so that no real folder comes near them
// while a runaway render is stopped in a fraction of a second of CPU and a
// few MiB of memory:
//   - 2 s: an ordinary render takes well under a millisecond; generating an
//     RSA key (genCA, genPrivateKey) takes up to a few hundred.
//   - 8 MiB: the API server refuses objects over 1.5 MiB; an object's
//     children plus the helpers' intermediate strings stay far below.
//   - 2,000 manifests: one child per Node of a large cluster.
//   - 100,000 calls: charts built on library helpers make a few thousand.
const (
	DefaultTimeout        = 2 * time.Second
	DefaultMaxOutputBytes = 8 << 20
	DefaultMaxManifests   = 2000
	DefaultMaxCalls       = 100_000
)

// maxDepth bounds the nesting of include, tpl and {{ template }} calls
// (Helm allows 1000 per template name; here it is the total, so that two
// helpers including each other cannot double it).
const maxDepth = 1000

// WithDefaults returns b with zero fields set to the defaults.
func (b Budget) WithDefaults() Budget {
	if b.Timeout <= 0 {
		b.Timeout = DefaultTimeout
	}
	if b.MaxOutputBytes <= 0 {
		b.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if b.MaxManifests <= 0 {
		b.MaxManifests = DefaultMaxManifests
	}
	if b.MaxCalls <= 0 {
		b.MaxCalls = DefaultMaxCalls
	}
	return b
}

// Merge returns b with the non-zero fields of o.
func (b Budget) Merge(o Budget) Budget {
	if o.Timeout > 0 {
		b.Timeout = o.Timeout
	}
	if o.MaxOutputBytes > 0 {
		b.MaxOutputBytes = o.MaxOutputBytes
	}
	if o.MaxManifests > 0 {
		b.MaxManifests = o.MaxManifests
	}
	if o.MaxCalls > 0 {
		b.MaxCalls = o.MaxCalls
	}
	return b
}

// grace is how long a render may run past its deadline before it is
// abandoned: long enough for the next deadline check in any template
// action, short against the deadline itself.
func (b Budget) grace() time.Duration { return min(time.Second, b.Timeout/2) }

// Names of the budgets, as BudgetError.Budget reports them.
const (
	BudgetTime      = "time"
	BudgetOutput    = "output"
	BudgetManifests = "manifests"
	BudgetCalls     = "calls"
	BudgetDepth     = "depth"
	BudgetCanceled  = "canceled"
	BudgetDegraded  = "degraded"
	// BudgetWork is one function call that would run too long to be
	// stopped: a deadline is only checked between calls, so a call that
	// compares every pair of a list (uniq, without) or runs a large
	// regular expression over a long string is refused past a fixed number
	// of steps, whatever is left of the time budget (see maxCompares and
	// maxRegexWork). It depends on the input alone.
	BudgetWork = "work"
)

// BudgetError is a render stopped by its budget.
type BudgetError struct {
	Budget string // one of the Budget* names
	Limit  int64  // the limit that was hit (bytes, manifests, calls, nanoseconds)
	Detail string // what hit it, e.g. "until 200000000"
}

func (e *BudgetError) Error() string {
	var msg string
	switch e.Budget {
	case BudgetTime:
		msg = fmt.Sprintf("render budget exceeded: time (%s)", time.Duration(e.Limit))
	case BudgetOutput:
		msg = fmt.Sprintf("render budget exceeded: output (%d bytes)", e.Limit)
	case BudgetManifests:
		msg = fmt.Sprintf("render budget exceeded: manifests (%d)", e.Limit)
	case BudgetCalls:
		msg = fmt.Sprintf("render budget exceeded: calls (%d include, tpl and template calls)", e.Limit)
	case BudgetDepth:
		msg = fmt.Sprintf("render budget exceeded: depth (%d nested include, tpl and template calls; recursion?)", e.Limit)
	case BudgetCanceled:
		msg = "render canceled"
	case BudgetWork:
		msg = fmt.Sprintf("render budget exceeded: work (%d steps in one function call)", e.Limit)
	case BudgetDegraded:
		msg = fmt.Sprintf("render refused: %d renders of this object are still running past their time budget", e.Limit)
	default:
		msg = "render budget exceeded: " + e.Budget
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Transient reports whether the same render may succeed when retried:
// time depends on the machine's load and the degraded state passes;
// output, manifests, calls, depth and work are a function of the input.
func (e *BudgetError) Transient() bool {
	switch e.Budget {
	case BudgetTime, BudgetCanceled, BudgetDegraded:
		return true
	}
	return false
}

// meter is one render's budget accounting. The render goroutine updates
// the counters; stop is set from timers and context callbacks, so it is
// atomic, and every check is a single load.
type meter struct {
	budget   Budget
	stop     atomic.Int32 // 0 running; else stopTime or stopCanceled
	produced int64
	calls    int
	depth    int
}

const (
	stopTime = iota + 1
	stopCanceled
)

// check returns the error that stops the render, if any.
func (m *meter) check() error {
	switch m.stop.Load() {
	case stopTime:
		return &BudgetError{Budget: BudgetTime, Limit: int64(m.budget.Timeout)}
	case stopCanceled:
		return &BudgetError{Budget: BudgetCanceled}
	}
	return nil
}

// charge counts n produced bytes; detail says what produced them.
func (m *meter) charge(n int64, detail func() string) error {
	if err := m.check(); err != nil {
		return err
	}
	if n < 0 || m.produced+n > m.budget.MaxOutputBytes {
		return &BudgetError{Budget: BudgetOutput, Limit: m.budget.MaxOutputBytes, Detail: describeWith(detail)}
	}
	m.produced += n
	return nil
}

func describeWith(detail func() string) string {
	if detail == nil {
		return ""
	}
	return detail()
}

// fits reports, without charging, whether n more bytes fit: for functions
// that must refuse before allocating (repeat, until).
func (m *meter) fits(n int64, detail func() string) error {
	if err := m.check(); err != nil {
		return err
	}
	if n < 0 || m.produced+n > m.budget.MaxOutputBytes {
		return &BudgetError{Budget: BudgetOutput, Limit: m.budget.MaxOutputBytes, Detail: describeWith(detail)}
	}
	return nil
}

func (m *meter) remaining() int64 { return m.budget.MaxOutputBytes - m.produced }

// What a function is charged for the collections it builds: what they
// take in memory, so that the output budget bounds memory too.
const (
	intCost   = 8  // an int of a []int (until)
	elemCost  = 16 // an element of a []any or a []string: an interface or a string header
	entryCost = 64 // a map entry: key, value and the table's share of a table grown by doubling
)

// bounded is the one shape of a guarded call: refuse when estimate, what
// call may allocate, does not fit what is left (nothing is allocated
// yet), then charge what it produced, cost(result), or the estimate when
// cost is nil. what names the call in the error.
func bounded[T any](m *meter, estimate int64, what func() string, call func() (T, error), cost func(T) int64) (T, error) {
	var zero T
	if err := m.fits(estimate, what); err != nil {
		return zero, err
	}
	out, err := call()
	if err != nil {
		return zero, err
	}
	n := estimate
	if cost != nil {
		n = cost(out)
	}
	if err := m.charge(n, what); err != nil {
		return zero, err
	}
	return out, nil
}

// tooMuchWork refuses a call that would take more than limit steps.
func tooMuchWork(steps, limit int64, detail func() string) error {
	if steps <= limit && steps >= 0 {
		return nil
	}
	return &BudgetError{Budget: BudgetWork, Limit: limit, Detail: detail()}
}

// enter counts one template execution (include, tpl, template) and one
// level of nesting; leave undoes the nesting.
func (m *meter) enter(what string) error {
	if err := m.check(); err != nil {
		return err
	}
	m.calls++
	if m.calls > m.budget.MaxCalls {
		return &BudgetError{Budget: BudgetCalls, Limit: int64(m.budget.MaxCalls), Detail: what}
	}
	m.depth++
	if m.depth > maxDepth {
		m.depth--
		return &BudgetError{Budget: BudgetDepth, Limit: maxDepth, Detail: what}
	}
	return nil
}

func (m *meter) leave() { m.depth-- }

// limitWriter is where a render writes; it charges the meter, so that the
// output budget also stops templates that print in a loop, and checks the
// deadline on every write.
type limitWriter struct {
	m    *meter
	buf  []byte
	what string // file or helper being written, for the error
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if err := w.m.charge(int64(len(p)), func() string { return w.what }); err != nil {
		return 0, err
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}
