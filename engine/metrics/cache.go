package metrics

import (
	"sync"
	"time"
)

// ttlCache keeps values until they expire, at most max of them: a full
// cache first drops what has expired, then arbitrary entries (Go's map
// order), which only costs their owners one more review.
type ttlCache[V any] struct {
	max int

	mu      sync.Mutex
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func newTTLCache[V any](max int) *ttlCache[V] {
	return &ttlCache[V]{max: max, entries: map[string]ttlEntry[V]{}}
}

// get returns the value of key unless it is missing or expired at now.
func (c *ttlCache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put keeps v for key for ttl from now.
func (c *ttlCache[V]) put(key string, v V, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = ttlEntry[V]{v: v, expires: now.Add(ttl)}
}
