package metrics

import (
	"context"
	"fmt"
	"sync"
)

// flights are the reviews under way, by key: a request whose review is
// already being asked waits for that answer instead of asking again, as
// golang.org/x/sync/singleflight does (not a dependency of ours, and its
// Group cannot take the Guard's look-up and admission under its lock).
//
// The caller holds mu while it decides: lookup a flight under way, else
// check its caches (a flight that just ended cached its answer before it
// left), else start one; then runs it without mu and finishes it.
type flights[V any] struct {
	mu    sync.Mutex
	calls map[string]*flight[V]
}

// flight is one review under way.
type flight[V any] struct {
	done    chan struct{} // closed once v and err are set
	v       V
	err     error
	waiters int // requests that joined it, with mu held; for tests
}

func newFlights[V any]() *flights[V] {
	return &flights[V]{calls: map[string]*flight[V]{}}
}

// join returns the flight of key under way, counting one more waiter;
// nil when there is none. Call with mu held.
func (fs *flights[V]) join(key string) *flight[V] {
	f := fs.calls[key]
	if f != nil {
		f.waiters++
	}
	return f
}

// start records a new flight of key. Call with mu held.
func (fs *flights[V]) start(key string) *flight[V] {
	f := &flight[V]{done: make(chan struct{})}
	fs.calls[key] = f
	return f
}

// finish gives f's waiters its answer and forgets it: the next request
// for key finds the answer in the caller's cache, or starts again.
func (fs *flights[V]) finish(key string, f *flight[V], v V, err error) {
	fs.mu.Lock()
	delete(fs.calls, key)
	fs.mu.Unlock()
	f.v, f.err = v, err
	close(f.done)
}

// wait returns f's answer once it has one, or ctx's error first.
func (f *flight[V]) wait(ctx context.Context, what string) (V, error) {
	select {
	case <-f.done:
		return f.v, f.err
	case <-ctx.Done():
		var zero V
		return zero, fmt.Errorf("wait for the %s of another request: %w", what, ctx.Err())
	}
}
