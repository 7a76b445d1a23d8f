package main

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"
)

// requestCounter counts the bench's own requests but its reads of /metrics,
// which kube-apiserver does not count either.
type requestCounter struct{ n atomic.Int64 }

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Path != "/metrics" {
			c.n.Add(1)
		}
		return rt.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// mark is the start of a measured phase.
type mark struct {
	at   time.Time
	snap snapshot
	own  int64
}

// mark reads the counters at the start of a phase.
func (b *bench) mark(ctx context.Context) (mark, error) {
	own := b.own.n.Load()
	s, err := scrape(ctx, b.cs)
	if err != nil {
		return mark{}, err
	}
	return mark{at: time.Now(), snap: s, own: own}, nil
}

// since reads the counters at the end of a phase and returns its requests.
func (b *bench) since(ctx context.Context, m mark) (*phase, error) {
	own := b.own.n.Load()
	s, err := scrape(ctx, b.cs)
	if err != nil {
		return nil, err
	}
	d := diff(m.snap, s)
	return &phase{
		Seconds: time.Since(m.at).Seconds(), Measured: d.Measured, Writes: d.Writes, Rejected: d.Rejected,
		Bench: own - m.own, Rows: rowsOf(d.ByKey),
	}, nil
}
