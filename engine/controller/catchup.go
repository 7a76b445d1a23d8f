package controller

import (
	"runtime"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// catchUp tells when a kind has reconciled, once each, every object it
// found when its watch first listed: the moment a started (or restarted)
// operator has confirmed the state of the cluster. It is logged, with the
// heap in use, for operators of the operator and for the benchmark.
type catchUp struct {
	log     klog.Logger
	start   time.Time
	mu      sync.Mutex
	pending map[string]bool // nil once caught up
	total   int
}

func newCatchUp(log klog.Logger, start time.Time, keys []string) *catchUp {
	c := &catchUp{log: log, start: start, pending: make(map[string]bool, len(keys)), total: len(keys)}
	for _, k := range keys {
		c.pending[k] = true
	}
	c.check()
	return c
}

// done records that key was reconciled (successfully or not: it was seen).
func (c *catchUp) done(key string) {
	c.mu.Lock()
	if c.pending == nil {
		c.mu.Unlock()
		return
	}
	delete(c.pending, key)
	c.mu.Unlock()
	c.check()
}

func (c *catchUp) check() {
	c.mu.Lock()
	if c.pending == nil || len(c.pending) > 0 {
		c.mu.Unlock()
		return
	}
	c.pending = nil
	c.mu.Unlock()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c.log.Info("Caught up", "objects", c.total, "seconds", time.Since(c.start).Seconds(), "heapInuseBytes", ms.HeapInuse)
}
