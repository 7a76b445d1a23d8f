package shard

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Config is what every replica of a ring must agree on. The durations are
// those of client-go's leader election, with the same meaning and the same
// relation; Kubernetes' own components use 15 s, 10 s and 2 s.
type Config struct {
	// Namespace holds the Leases: the operator's.
	Namespace string
	// Ring names the ring: the operator's field manager. A label value.
	Ring string
	// LeaseDuration is how long after an observer last saw a shard renew
	// its Lease the shard counts as gone. Whole seconds: the Lease stores
	// seconds.
	LeaseDuration time.Duration
	// RenewDeadline is how long a shard keeps trying to renew before it
	// stops itself. Shorter than LeaseDuration: the gap is the margin by
	// which a shard has stopped before anyone may take its objects.
	RenewDeadline time.Duration
	// RetryPeriod is how often a shard renews its Lease.
	RetryPeriod time.Duration
}

// Validate says what is wrong with c: each field's fault, and the first
// of the durations' (they are checked against each other).
func (c Config) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q: %s", c.Namespace, strings.Join(msgs, "; ")))
	}
	if c.Ring == "" {
		errs = append(errs, errors.New("ring: empty"))
	} else if msgs := validation.IsValidLabelValue(c.Ring); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("ring %q: not a label value: %s", c.Ring, strings.Join(msgs, "; ")))
	} else if msgs := validation.IsDNS1123Subdomain(LeaseName(c.Ring, "x")); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("ring %q: cannot name a Lease %q: %s", c.Ring, LeaseName(c.Ring, "x"), strings.Join(msgs, "; ")))
	}
	switch {
	case c.LeaseDuration < time.Second || c.LeaseDuration%time.Second != 0:
		errs = append(errs, fmt.Errorf("lease duration %s: must be whole seconds, at least 1s", c.LeaseDuration))
	case c.RenewDeadline <= 0 || c.RenewDeadline >= c.LeaseDuration:
		// Equal would leave no margin: an observer could see the Lease
		// expire at the instant the holder stops.
		errs = append(errs, fmt.Errorf("renew deadline %s: must be above 0 and below the lease duration %s", c.RenewDeadline, c.LeaseDuration))
	case c.RetryPeriod <= 0 || c.RetryPeriod >= c.RenewDeadline:
		errs = append(errs, fmt.Errorf("retry period %s: must be above 0 and below the renew deadline %s", c.RetryPeriod, c.RenewDeadline))
	}
	if len(errs) > 0 {
		return fmt.Errorf("shard config: %w", errors.Join(errs...))
	}
	return nil
}

// leaseSeconds is LeaseDuration as the Lease stores it.
func (c Config) leaseSeconds() int32 { return int32(c.LeaseDuration / time.Second) }
