package metrics

import (
	"container/list"
	"sync"
	"time"
)

// lruCache keeps values until they expire, at most max of them. A full
// cache drops its least recently used entry: a scraper that comes back
// every few seconds is always near the front, so only max newer keys in
// between can push it out, never arbitrary ones (Go's map order, as
// before, let any flood drop any entry). The Guard makes sure that those
// newer keys cannot come faster than its review limit.
//
// An expired entry stays until it is used again or pushed out: get does
// not return it, but known does, which is how the Guard tells a scraper
// whose answer just expired from a token it never saw.
type lruCache[V any] struct {
	max int

	mu      sync.Mutex
	order   *list.List // of *lruEntry[V]; front: most recently used
	entries map[string]*list.Element
}

type lruEntry[V any] struct {
	key     string
	v       V
	expires time.Time
}

func newLRUCache[V any](max int) *lruCache[V] {
	return &lruCache[V]{max: max, order: list.New(), entries: map[string]*list.Element{}}
}

// get returns the value of key unless it is missing or expired at now; a
// hit makes key the most recently used.
func (c *lruCache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		var zero V
		return zero, false
	}
	e := el.Value.(*lruEntry[V])
	if !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.v, true
}

// known reports whether key has an entry, expired or not.
func (c *lruCache[V]) known(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[key]
	return ok
}

// put keeps v for key for ttl from now, as the most recently used entry,
// dropping the least recently used one when the cache is full.
func (c *lruCache[V]) put(key string, v V, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*lruEntry[V])
		e.v, e.expires = v, now.Add(ttl)
		c.order.MoveToFront(el)
		return
	}
	for len(c.entries) >= c.max {
		oldest := c.order.Back()
		if oldest == nil {
			break
		}
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*lruEntry[V]).key)
	}
	c.entries[key] = c.order.PushFront(&lruEntry[V]{key: key, v: v, expires: now.Add(ttl)})
}

// remove drops key's entry, if any.
func (c *lruCache[V]) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.order.Remove(el)
		delete(c.entries, key)
	}
}

// len is the number of entries, expired or not.
func (c *lruCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
