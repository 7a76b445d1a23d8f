package metrics

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// What anyone who reaches the metrics port can make the Guard ask the API
// server. Without a limit, every request with a made-up bearer token cost a
// TokenReview: 400 anonymous requests made 400 TokenReviews in 2 s, the
// operator having no client-side limit of its own (run --qps -1), and
// filled the token cache until the real scraper's answer was dropped.
//
// A scraper needs a handful of new tokens an hour (a projected token is
// renewed every ~48 minutes; an HA Prometheus has two), a person with curl
// a few more: 5 reviews a second, with bursts of 20, leave them all the room
// they need, and hold a flood to 300 TokenReviews a minute, where the API
// server's Priority and Fairness shares them with everyone else. Reviews
// take milliseconds; 8 at once only fill up when the API server is slow,
// and then more would only wait longer.
const (
	DefaultReviewRate         = 5.0 // TokenReviews a second of tokens without a cached answer
	DefaultReviewBurst        = 20
	DefaultMaxReviewsInFlight = 8
)

// The values of the reason label of operator_metrics_auth_throttled_total.
const (
	// ThrottledRateLimit: more new tokens than ReviewRate allows.
	ThrottledRateLimit = "rate_limit"
	// ThrottledInFlight: MaxReviewsInFlight reviews already wait for the
	// API server.
	ThrottledInFlight = "in_flight"
)

// throttleLogEvery spaces the log lines of a flood: one every 10 s, with
// how many requests were refused since the last one.
const throttleLogEvery = 10 * time.Second

// throttledError is why a token was not reviewed: the Guard answers 429.
type throttledError struct{ reason string }

func (e *throttledError) Error() string {
	return "too many token reviews (" + e.reason + "): not asked"
}

// admit takes a slot for a review of the token of key, with
// g.tokenFlights.mu held, and
// returns the semaphore to give it back to; a *throttledError when the
// limits refuse it. A token known valid, whose answer expired, has slots
// of its own and no rate limit: however many made-up tokens arrive, the
// scraper's review still goes through. Those reviews are bounded too: only
// a review that said a token was valid makes it known, and those reviews
// are limited; at most maxValidTokens are known, each reviewed again once
// per TokenTTL while it stays valid (every request, one at a time, while
// the API server fails: errors are not cached), and a known token found
// invalid is forgotten, back under the limit.
func (g *Guard) admit(key string) (chan struct{}, error) {
	known := g.valid.known(key)
	slots := g.newSlots
	if known {
		slots = g.knownSlots
	}
	select {
	case slots <- struct{}{}:
	default:
		return nil, &throttledError{reason: ThrottledInFlight}
	}
	if !known && !g.limiter.AllowN(g.now(), 1) {
		<-slots
		return nil, &throttledError{reason: ThrottledRateLimit}
	}
	return slots, nil
}

// throttle answers a request whose token could not be reviewed now: 429
// with Retry-After (a token comes back to the limiter every 1/ReviewRate
// seconds), counted, and logged at most every throttleLogEvery.
func (g *Guard) throttle(w http.ResponseWriter, r *http.Request, reason string) {
	g.metrics.throttled.WithLabelValues(reason).Inc()
	log := klog.FromContext(r.Context())
	if n, ok := g.throttleLog.add(g.now()); ok {
		log.Info("Metrics requests refused without a TokenReview: too many tokens without a cached answer",
			"refused", n, "reason", reason, "remote", r.RemoteAddr,
			"reviewRate", g.opts.ReviewRate, "reviewBurst", g.opts.ReviewBurst, "maxReviewsInFlight", g.opts.MaxReviewsInFlight)
	} else {
		log.V(2).Info("Metrics request refused without a TokenReview", "reason", reason, "remote", r.RemoteAddr)
	}
	retry := int(math.Ceil(1 / g.opts.ReviewRate))
	w.Header().Set("Retry-After", strconv.Itoa(max(retry, 1)))
	text(w, http.StatusTooManyRequests, "Too Many Requests: too many tokens to review, retry later\n")
}

// throttleLog counts refusals between two log lines.
type throttleLog struct {
	mu     sync.Mutex
	last   time.Time
	refuse int
}

// add counts one refusal at now, and says whether to log a line, with the
// refusals since the last one (this one included).
func (l *throttleLog) add(now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refuse++
	if !l.last.IsZero() && now.Sub(l.last) < throttleLogEvery {
		return 0, false
	}
	n := l.refuse
	l.last, l.refuse = now, 0
	return n, true
}

// authMetrics count what the Guards refuse without asking the API server.
type authMetrics struct {
	throttled *prometheus.CounterVec
}

// defaultAuth is the process's: NewGuard counts into it, NewRegistry
// serves it.
var defaultAuth = newAuthMetrics()

var _ prometheus.Collector = (*authMetrics)(nil)

func newAuthMetrics() *authMetrics {
	m := &authMetrics{throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "operator_metrics_auth_throttled_total",
		Help: "Total number of /metrics requests answered 429 without a TokenReview, by reason: rate_limit (more tokens without a cached answer than the review rate allows) or in_flight (too many reviews waiting for the API server).",
	}, []string{"reason"})}
	// Both series from the start, at 0: an alert on their rate needs them.
	for _, reason := range []string{ThrottledRateLimit, ThrottledInFlight} {
		m.throttled.WithLabelValues(reason)
	}
	return m
}

// Describe implements prometheus.Collector.
func (m *authMetrics) Describe(ch chan<- *prometheus.Desc) { m.throttled.Describe(ch) }

// Collect implements prometheus.Collector.
func (m *authMetrics) Collect(ch chan<- prometheus.Metric) { m.throttled.Collect(ch) }
