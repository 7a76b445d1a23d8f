package controller

import (
	"runtime"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// catchUp tells when a kind has reconciled, once each, every object it
// found when its watch first listed: the moment a started (or restarted)
// operator has confirmed the state of the cluster. It is logged, with the
// heap in use, for operators of the operator and for the benchmark.
type catchUp struct {
	log   klog.Logger
	start time.Time
	mu    sync.Mutex
	// seen holds the keys reconciled before the watch listed; pending, the
	// listed keys not reconciled yet. Both nil once caught up.
	seen    map[cache.ObjectName]bool
	pending map[cache.ObjectName]bool
	total   int
}

func newCatchUp(log klog.Logger, start time.Time) *catchUp {
	return &catchUp{log: log, start: start, seen: map[cache.ObjectName]bool{}}
}

// listed gives the keys the watch found in its initial list.
func (c *catchUp) listed(keys []cache.ObjectName) {
	c.mu.Lock()
	c.pending, c.total = make(map[cache.ObjectName]bool, len(keys)), len(keys)
	for _, k := range keys {
		if !c.seen[k] {
			c.pending[k] = true
		}
	}
	c.seen = nil
	c.mu.Unlock()
	c.check()
}

// done records that key was reconciled (successfully or not: it was seen).
func (c *catchUp) done(key cache.ObjectName) {
	c.mu.Lock()
	switch {
	case c.seen != nil:
		c.seen[key] = true
		c.mu.Unlock()
		return
	case c.pending == nil:
		c.mu.Unlock()
		return
	}
	delete(c.pending, key)
	c.mu.Unlock()
	c.check()
}

func (c *catchUp) check() {
	c.mu.Lock()
	if c.seen != nil || c.pending == nil || len(c.pending) > 0 {
		c.mu.Unlock()
		return
	}
	c.pending = nil
	c.mu.Unlock()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c.log.Info("Caught up", "objects", c.total, "seconds", time.Since(c.start).Seconds(), "heapInuseBytes", ms.HeapInuse)
}
