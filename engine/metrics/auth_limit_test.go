package metrics

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newTestGuard is a Guard of f on a clock the test moves, counting into
// metrics of its own.
func newTestGuard(f *fakeReviews, opts GuardOptions) (*Guard, *time.Time) {
	g := NewGuard(f.reviews(), opts)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g.now = func() time.Time { return now }
	g.metrics = newAuthMetrics()
	return g, &now
}

func throttledCount(g *Guard, reason string) int {
	return int(testutil.ToFloat64(g.metrics.throttled.WithLabelValues(reason)))
}

// TestGuardFlood: a flood of made-up tokens costs at most the limit's
// TokenReviews, the rest answered 429 without asking; the scraper whose
// valid token is cached keeps getting 200 throughout, without a review,
// and when its answer expires during the flood, its review is not
// throttled. Invalid answers, however many, never push it out.
func TestGuardFlood(t *testing.T) {
	cases := []struct {
		name string
		opts GuardOptions
		// flood tokens, the clock moving step after each; every
		// scrapeEvery of them the scraper scrapes. At expireAt (when > 0)
		// the clock jumps past the TTLs: the scraper's answers expire.
		flood, scrapeEvery, expireAt int
		step                         time.Duration
		// TokenReviews of new tokens, the scraper's first included: at
		// least, at most (the burst, and the rate over the flood's time).
		wantMin, wantMax int
	}{
		{name: "400 tokens at once, the defaults", flood: 400, scrapeEvery: 10,
			wantMin: DefaultReviewBurst, wantMax: DefaultReviewBurst},
		{name: "400 tokens in 2 s, 5/s bursts of 20", opts: GuardOptions{ReviewRate: 5, ReviewBurst: 20},
			flood: 400, scrapeEvery: 10, step: 5 * time.Millisecond, wantMin: 20, wantMax: 20 + 2*5},
		{name: "10,000 tokens in 10 s, 1/s bursts of 3", opts: GuardOptions{ReviewRate: 1, ReviewBurst: 3},
			flood: 10000, scrapeEvery: 100, step: time.Millisecond, wantMin: 3, wantMax: 3 + 10},
		{name: "the scraper's answers expire mid-flood", flood: 400, scrapeEvery: 50, expireAt: 200,
			// The jump refills the bucket once; the scraper's second
			// review is not one of a new token.
			wantMin: 2 * DefaultReviewBurst, wantMax: 2 * DefaultReviewBurst},
		{name: "no effective limit: 6,000 invalid answers churn their own cache", opts: GuardOptions{ReviewRate: 1e9, ReviewBurst: 1e6},
			flood: 6000, scrapeEvery: 10, wantMin: 6001, wantMax: 6001},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeReviews()
			g, now := newTestGuard(f, tc.opts)
			h := g.Wrap(okHandler)
			if code, _, _ := request(t, h, http.MethodGet, "Bearer reader-token"); code != 200 {
				t.Fatalf("the scraper's first scrape: %d", code)
			}
			_, sar0 := f.counts()
			codes := map[int]int{}
			scrapes := 0
			for i := range tc.flood {
				if i == tc.expireAt && tc.expireAt > 0 {
					*now = now.Add(DefaultTokenTTL + DefaultAllowTTL)
				}
				code, body, header := request(t, h, http.MethodGet, fmt.Sprintf("Bearer forged-%d", i))
				codes[code]++
				switch code {
				case http.StatusUnauthorized:
				case http.StatusTooManyRequests:
					if header.Get("Retry-After") == "" || !strings.Contains(body, "Too Many Requests") {
						t.Fatalf("429 %q without Retry-After (%v)", body, header)
					}
				default:
					t.Fatalf("a made-up token: %d %q", code, body)
				}
				*now = now.Add(tc.step)
				if i%tc.scrapeEvery == 0 {
					scrapes++
					if code, body, _ := request(t, h, http.MethodGet, "Bearer reader-token"); code != 200 {
						t.Fatalf("the scraper, after %d made-up tokens: %d %q", i+1, code, body)
					}
				}
			}
			f.mu.Lock()
			scraper, flood := f.reviewed["reader-token"], f.tokenReviews-f.reviewed["reader-token"]
			f.mu.Unlock()
			_, sar := f.counts()
			t.Logf("%d made-up tokens: %d TokenReviews, %v; %d scrapes: %d TokenReviews, %d SubjectAccessReviews",
				tc.flood, flood, codes, scrapes, scraper-1, sar-sar0)
			if n := flood + 1; n < tc.wantMin || n > tc.wantMax {
				t.Errorf("the flood made %d TokenReviews, the scraper's first 1; want %d to %d in all", flood, tc.wantMin, tc.wantMax)
			}
			if codes[http.StatusUnauthorized] != flood || codes[http.StatusTooManyRequests] != tc.flood-flood {
				t.Errorf("answers %v: want 401 for each of the %d reviewed, 429 for the others", codes, flood)
			}
			if got := throttledCount(g, ThrottledRateLimit); got != tc.flood-flood {
				t.Errorf("operator_metrics_auth_throttled_total{reason=rate_limit} = %d, want %d", got, tc.flood-flood)
			}
			wantScraper := 1
			if tc.expireAt > 0 {
				wantScraper = 2 // once more when its answer expired
			}
			if scraper != wantScraper || sar-sar0 != wantScraper-1 {
				t.Errorf("the scraper's %d scrapes made %d TokenReviews and %d SubjectAccessReviews, want %d and %d",
					scrapes, scraper-1, sar-sar0, wantScraper-1, wantScraper-1)
			}
		})
	}
}

// TestGuardOneReviewPerToken: concurrent requests with one token not seen
// yet make one TokenReview and one SubjectAccessReview, whatever the
// in-flight bound; all get its answer.
func TestGuardOneReviewPerToken(t *testing.T) {
	cases := []struct {
		name     string
		token    string
		wantCode int
		wantSAR  int
	}{
		{"a valid token", "slow-reader", http.StatusOK, 1},
		{"an invalid token", "slow-forged", http.StatusUnauthorized, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const n = 50
			f := newFakeReviews()
			f.users["slow-reader"] = f.users["reader-token"]
			f.gate, f.gated = make(chan struct{}), func(token string) bool { return strings.HasPrefix(token, "slow-") }
			g, _ := newTestGuard(f, GuardOptions{MaxReviewsInFlight: 1, ReviewBurst: 1, ReviewRate: 0.001})
			h := g.Wrap(okHandler)
			codes := make(chan int, n)
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					code, _, _ := request(t, h, http.MethodGet, "Bearer "+tc.token)
					codes <- code
				})
			}
			// Every request either reviews or waits for the review.
			waitFor(t, "one review and its waiters", func() bool {
				g.tokenFlights.mu.Lock()
				defer g.tokenFlights.mu.Unlock()
				f.mu.Lock()
				defer f.mu.Unlock()
				for _, fl := range g.tokenFlights.calls {
					return f.entered == 1 && fl.waiters == n-1
				}
				return false
			})
			close(f.gate)
			wg.Wait()
			close(codes)
			for code := range codes {
				if code != tc.wantCode {
					t.Errorf("a request: %d, want %d", code, tc.wantCode)
				}
			}
			if tr, sar := f.counts(); tr != 1 || sar != tc.wantSAR {
				t.Errorf("%d concurrent requests: %d TokenReviews, %d SubjectAccessReviews; want 1 and %d", n, tr, sar, tc.wantSAR)
			}
			if got := throttledCount(g, ThrottledInFlight) + throttledCount(g, ThrottledRateLimit); got != 0 {
				t.Errorf("%d requests throttled", got)
			}
		})
	}
}

// TestGuardOneAccessReviewPerUser: concurrent requests of one user whose
// token is cached but whose right is not make one SubjectAccessReview.
func TestGuardOneAccessReviewPerUser(t *testing.T) {
	const n = 20
	gate := make(chan struct{})
	f := newFakeReviews()
	g, _ := newTestGuard(f, GuardOptions{})
	entered := make(chan struct{}, n)
	g.reviews.Access = gatedAccess{fakeAccess{f}, gate, entered}
	g.valid.put(tokenKey("reader-token"), ptrTo(f.users["reader-token"]), g.now(), time.Minute)
	h := g.Wrap(okHandler)
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for range n {
		wg.Go(func() {
			code, _, _ := request(t, h, http.MethodGet, "Bearer reader-token")
			codes <- code
		})
	}
	<-entered
	waitFor(t, "one access review and its waiters", func() bool {
		g.accessFlights.mu.Lock()
		defer g.accessFlights.mu.Unlock()
		for _, fl := range g.accessFlights.calls {
			return fl.waiters == n-1
		}
		return false
	})
	close(gate)
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Errorf("a request: %d", code)
		}
	}
	if tr, sar := f.counts(); tr != 0 || sar != 1 {
		t.Errorf("%d concurrent requests: %d TokenReviews, %d SubjectAccessReviews; want 0 and 1", n, tr, sar)
	}
}

type gatedAccess struct {
	fakeAccess
	gate    chan struct{}
	entered chan struct{}
}

func (a gatedAccess) Create(ctx context.Context, sar *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	a.entered <- struct{}{}
	<-a.gate
	return a.fakeAccess.Create(ctx, sar, opts)
}

// TestGuardReviewsInFlight: while MaxReviewsInFlight reviews of new
// tokens wait for a slow API server, another new token is answered 429
// at once; the scraper whose answer expired still gets its review.
func TestGuardReviewsInFlight(t *testing.T) {
	const slots = 4
	f := newFakeReviews()
	f.gate, f.gated = make(chan struct{}), func(token string) bool { return strings.HasPrefix(token, "slow-") }
	g, now := newTestGuard(f, GuardOptions{MaxReviewsInFlight: slots, ReviewRate: 1000, ReviewBurst: 1000})
	h := g.Wrap(okHandler)
	if code, _, _ := request(t, h, http.MethodGet, "Bearer reader-token"); code != 200 {
		t.Fatalf("the scraper's first scrape: %d", code)
	}
	*now = now.Add(DefaultTokenTTL) // its answers expire

	var wg sync.WaitGroup
	for i := range slots {
		wg.Go(func() {
			if code, _, _ := request(t, h, http.MethodGet, fmt.Sprintf("Bearer slow-%d", i)); code != http.StatusUnauthorized {
				t.Errorf("slow-%d: %d, want 401 once reviewed", i, code)
			}
		})
	}
	waitFor(t, "the slots taken", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.entered == slots })

	code, body, header := request(t, h, http.MethodGet, "Bearer one-more")
	if code != http.StatusTooManyRequests || header.Get("Retry-After") != "1" {
		t.Errorf("a new token while %d reviews wait: %d %q Retry-After %q, want 429 and 1", slots, code, body, header.Get("Retry-After"))
	}
	if got := throttledCount(g, ThrottledInFlight); got != 1 {
		t.Errorf("operator_metrics_auth_throttled_total{reason=in_flight} = %d, want 1", got)
	}
	if code, body, _ := request(t, h, http.MethodGet, "Bearer reader-token"); code != http.StatusOK {
		t.Errorf("the known scraper while %d reviews of new tokens wait: %d %q, want 200", slots, code, body)
	}
	close(f.gate)
	wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reviewed["reader-token"] != 2 || f.reviewed["one-more"] != 0 {
		t.Errorf("TokenReviews %v: want the scraper's twice, none of one-more", f.reviewed)
	}
}

// TestGuardRetryAfter: Retry-After is when the bucket has a token again,
// in whole seconds.
func TestGuardRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want string
	}{{5, "1"}, {1, "1"}, {0.25, "4"}, {0.3, "4"}} {
		f := newFakeReviews()
		g, _ := newTestGuard(f, GuardOptions{ReviewRate: tc.rate, ReviewBurst: 1})
		h := g.Wrap(okHandler)
		request(t, h, http.MethodGet, "Bearer a")
		code, _, header := request(t, h, http.MethodGet, "Bearer b")
		if code != http.StatusTooManyRequests || header.Get("Retry-After") != tc.want {
			t.Errorf("rate %g: %d Retry-After %q, want 429 %s", tc.rate, code, header.Get("Retry-After"), tc.want)
		}
	}
}

// TestThrottleLog: a flood is one log line every 10 s, saying how many
// requests were refused since the last.
func TestThrottleLog(t *testing.T) {
	var l throttleLog
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		at     time.Duration
		wantN  int
		wantOK bool
	}{{0, 1, true}, {time.Second, 0, false}, {9 * time.Second, 0, false}, {10 * time.Second, 3, true}, {15 * time.Second, 0, false}, {time.Minute, 2, true}}
	for _, st := range steps {
		if n, ok := l.add(t0.Add(st.at)); n != st.wantN || ok != st.wantOK {
			t.Errorf("at %s: %d %v, want %d %v", st.at, n, ok, st.wantN, st.wantOK)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func ptrTo(u authenticationv1.UserInfo) *authenticationv1.UserInfo { return &u }
