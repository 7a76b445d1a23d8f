package budget

import (
	"sync/atomic"
	"time"
)

// Limits are what one render may use.
type Limits struct {
	Timeout time.Duration // reported by the time error; the caller's timer calls Expire
	Output  int64         // bytes produced: see render.Budget.MaxOutputBytes
	Calls   int           // include, tpl and {{ template }} calls
}

// MaxDepth bounds the nesting of include, tpl and {{ template }} calls
// (Helm allows 1000 per template name; here it is the total, so that two
// helpers including each other cannot double it).
const MaxDepth = 1000

// What a function is charged for the collections it builds: what they
// take in memory, so that the output budget bounds memory too.
const (
	IntCost   = 8  // an int of a []int (until)
	ElemCost  = 16 // an element of a []any or a []string: an interface or a string header
	EntryCost = 64 // a map entry: key, value and the table's share of a table grown by doubling
)

// Meter is one render's budget accounting. The render goroutine updates
// the counters; stop is set from timers and context callbacks, so it is
// atomic, and every check is a single load.
//
// A Meter serves one render and is not reused: a timer that fires late,
// or a caller that abandons the render, may still stop it after the
// render has ended, and must never stop the next one.
type Meter struct {
	limits   Limits
	stop     atomic.Int32 // 0 running; else stopTime or stopCanceled
	produced int64
	calls    int
	depth    int
}

const (
	stopTime = iota + 1
	stopCanceled
)

// Init sets the limits of a new meter.
func (m *Meter) Init(l Limits) { m.limits = l }

// Expire stops the render for its deadline, unless it was stopped already.
func (m *Meter) Expire() { m.stop.CompareAndSwap(0, stopTime) }

// Cancel stops the render for its caller's context, unless it was stopped
// already.
func (m *Meter) Cancel() { m.stop.CompareAndSwap(0, stopCanceled) }

// Check returns the error that stops the render, if any.
func (m *Meter) Check() error {
	switch m.stop.Load() {
	case stopTime:
		return &Error{Budget: Time, Limit: int64(m.limits.Timeout)}
	case stopCanceled:
		return &Error{Budget: Canceled}
	}
	return nil
}

// Charge counts n produced bytes; what says what produced them, and is
// only called for the error.
func (m *Meter) Charge(n int64, what func() string) error {
	if err := m.fits(n, what); err != nil {
		return err
	}
	m.produced += n
	return nil
}

// Fits reports, without charging, whether n more bytes fit: for work that
// allocates before its real cost is known, and is charged once it is.
func (m *Meter) Fits(n int64, what func() string) error { return m.fits(n, what) }

// fits reports, without charging, whether n more bytes fit.
func (m *Meter) fits(n int64, what func() string) error {
	if err := m.Check(); err != nil {
		return err
	}
	if n < 0 || m.produced+n > m.limits.Output {
		return m.Exceeded(describe(what))
	}
	return nil
}

func describe(what func() string) string {
	if what == nil {
		return ""
	}
	return what()
}

// Remaining is what is left of the output budget.
func (m *Meter) Remaining() int64 { return m.limits.Output - m.produced }

// Exceeded is the output budget's error, for a refusal that counted on its
// own what would not fit (matches of a regular expression, values of a
// YAML document).
func (m *Meter) Exceeded(detail string) error {
	return &Error{Budget: Output, Limit: m.limits.Output, Detail: detail}
}

// Bounded is the one shape of a call that allocates: refuse when estimate,
// what call may allocate, does not fit what is left (nothing is allocated
// yet), call, then charge what it produced, cost(result), or the estimate
// when cost is nil. what names the call in the error. A call that fails
// is not charged.
func Bounded[T any](m *Meter, estimate int64, what func() string, call func() (T, error), cost func(T) int64) (T, error) {
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
	if err := m.Charge(n, what); err != nil {
		return zero, err
	}
	return out, nil
}

// Enter counts one template execution (include, tpl, template) and one
// level of nesting; Leave undoes the nesting.
func (m *Meter) Enter(what string) error {
	if err := m.Check(); err != nil {
		return err
	}
	m.calls++
	if m.calls > m.limits.Calls {
		return &Error{Budget: Calls, Limit: int64(m.limits.Calls), Detail: what}
	}
	m.depth++
	if m.depth > MaxDepth {
		m.depth--
		return &Error{Budget: Depth, Limit: MaxDepth, Detail: what}
	}
	return nil
}

// Leave ends what Enter began.
func (m *Meter) Leave() { m.depth-- }

// Depth is the current nesting of template calls.
func (m *Meter) Depth() int { return m.depth }

// MulSat multiplies non-negative a and b, saturating instead of
// overflowing: estimates are products of lengths a template chooses.
func MulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return a * b
	}
	if a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}

// AddSat adds non-negative a and b, saturating instead of overflowing.
func AddSat(a, b int64) int64 {
	if a+b < a {
		return 1 << 62
	}
	return min(a+b, 1<<62)
}
