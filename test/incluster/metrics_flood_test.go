package incluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmplop/operator/internal/testsupport/metricstest"
	"github.com/tmplop/operator/test/cluster"
)

// The Guard's default limit on the TokenReviews of tokens it has no
// answer for (docs/metrics.md, engine/metrics.DefaultReviewRate and
// DefaultReviewBurst), spelled out here: this test states what the
// operator promises the API server, whatever the code says.
const (
	reviewRate  = 5.0 // a second
	reviewBurst = 20
)

// TestMetricsAuthFlood: anyone who reaches the metrics port sends 400
// requests with random bearer tokens to the operator's /metrics, as deploy/
// runs it (no client-side limit of its own, --qps -1). kube-apiserver's
// own apiserver_request_total says how many TokenReviews that cost: at
// most the Guard's limit (its burst, and its rate over the flood's
// duration), where each made-up token used to cost one. Meanwhile the
// scraper bound to operator-metrics-reader, its token already known, gets
// every one of its scrapes; the refused requests are 429 and counted.
func TestMetricsAuthFlood(t *testing.T) {
	r := startReplica(t)
	url := "https://" + r.metrics + "/metrics"
	// Connections kept open, as a flooder would: the test measures the
	// reviews, not TLS handshakes. The operator's certificate is
	// self-signed (no --metrics-cert-dir), so it is not verified.
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
		MaxIdleConnsPerHost: 32,
	}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	cluster.Eventually(t, 60*time.Second, "the scraper gets /metrics", func(ctx context.Context) (bool, error) {
		code, err := scrapeWith(ctx, client, url, scraperToken)
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, fmt.Errorf("GET /metrics as the scraper: %d", code)
		}
		return true, nil
	})
	before := tokenReviews(t)

	const requests, workers = 400, 16
	var (
		next     atomic.Int64
		mu       sync.Mutex
		codes    = map[int]int{}
		scrapes  = map[int]int{}
		firstErr error
		wg       sync.WaitGroup
	)
	record := func(m map[int]int, code int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		m[code]++
	}
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= requests {
				code, err := scrapeWith(t.Context(), client, url, rand.Text()) // a token nobody issued
				record(codes, code, err)
			}
		})
	}
	// The scraper, one scrape after the other while the flood lasts.
	flooding := make(chan struct{})
	scraperDone := make(chan struct{})
	go func() {
		defer close(scraperDone)
		for {
			code, err := scrapeWith(t.Context(), client, url, scraperToken)
			record(scrapes, code, err)
			select {
			case <-flooding:
				return
			default:
			}
		}
	}()
	wg.Wait()
	elapsed := time.Since(start)
	close(flooding)
	<-scraperDone
	if firstErr != nil {
		t.Fatalf("GET /metrics: %v", firstErr)
	}

	// kube-apiserver counts a request once its handler returns, which may
	// be just after the operator read the answer: read until it settles.
	var after float64
	cluster.Eventually(t, 30*time.Second, "apiserver_request_total settles", func(context.Context) (bool, error) {
		a := tokenReviews(t)
		time.Sleep(500 * time.Millisecond)
		after = tokenReviews(t)
		return a == after, nil
	})
	reviews := int(after - before)
	bound := reviewBurst + int(reviewRate*elapsed.Seconds()+1)
	t.Logf("%d requests with random tokens in %s, %d at a time: answers %v; kube-apiserver received %d TokenReviews (limit %d); the scraper's answers %v",
		requests, elapsed.Round(time.Millisecond), workers, codes, reviews, bound, scrapes)
	if reviews > bound {
		t.Errorf("%d requests with random tokens made %d TokenReviews in %s; want at most %d (a burst of %d, then %g a second)",
			requests, reviews, elapsed.Round(time.Millisecond), bound, reviewBurst, reviewRate)
	}
	if codes[http.StatusUnauthorized]+codes[http.StatusTooManyRequests] != requests {
		t.Errorf("answers to random tokens %v: want only 401 (reviewed) and 429 (not)", codes)
	}
	if scrapes[http.StatusOK] == 0 || len(scrapes) != 1 {
		t.Errorf("the scraper's answers during the flood %v: want 200 every time", scrapes)
	}
	if code, err := scrapeWith(t.Context(), client, url, scraperToken); err != nil || code != http.StatusOK {
		t.Fatalf("the scraper after the flood: %d %v", code, err)
	}
	if refused := metricSum(t, r, "operator_metrics_auth_throttled_total"); int(refused) != codes[http.StatusTooManyRequests] {
		t.Errorf("operator_metrics_auth_throttled_total = %g, want the %d answers 429", refused, codes[http.StatusTooManyRequests])
	}
}

// scrapeWith GETs url with a bearer token and returns the status code.
func scrapeWith(ctx context.Context, client *http.Client, url, token string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// tokenReviews is how many TokenReviews kube-apiserver has answered, from
// its own /metrics read as the admin, as hack/bench counts requests.
func tokenReviews(t *testing.T) float64 {
	t.Helper()
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("kube-apiserver /metrics: %v", err)
	}
	mfs, err := metricstest.Parse(string(body))
	if err != nil {
		t.Fatalf("kube-apiserver /metrics: %v", err)
	}
	mf, ok := mfs["apiserver_request_total"]
	if !ok {
		t.Fatal("kube-apiserver /metrics has no apiserver_request_total")
	}
	return metricstest.Total(mf, map[string]string{"group": "authentication.k8s.io", "resource": "tokenreviews"})
}
