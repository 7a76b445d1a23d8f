package render

import (
	"time"

	"github.com/tmplop/operator/engine/render/internal/budget"
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
	BudgetTime      = budget.Time
	BudgetOutput    = budget.Output
	BudgetManifests = budget.Manifests
	BudgetCalls     = budget.Calls
	BudgetDepth     = budget.Depth
	BudgetCanceled  = budget.Canceled
	BudgetDegraded  = budget.Degraded
	// BudgetWork is one function call that would run too long to be
	// stopped: a deadline is only checked between calls, so a call that
	// compares every pair of a list (uniq, without) or runs a large
	// regular expression over a long string is refused past a fixed number
	// of steps, whatever is left of the time budget (see maxCompares and
	// maxRegexWork). It depends on the input alone.
	BudgetWork = budget.Work
)

// BudgetError is a render stopped by its budget: Budget is one of the
// Budget* names, Limit the limit that was hit (bytes, manifests, calls,
// nanoseconds), Detail what hit it, e.g. "until 200000000". RequeueMark
// says what retrying can do (engine/requeue): only time, a cancel and the
// degraded refusal depend on anything but the input.
//
// It is defined by the internal package that meters every render
// (internal/budget), which builds every budget error; the alias keeps it
// the one type callers match with errors.As.
type BudgetError = budget.Error

// limits are what the meter of a render under b counts against.
func (b Budget) limits() budget.Limits {
	return budget.Limits{Timeout: b.Timeout, Output: b.MaxOutputBytes, Calls: b.MaxCalls}
}
