package chart

import (
	"container/list"
	"sync"

	"github.com/tmplop/operator/engine/render"
)

// maxSets bounds the template sets of enabled charts a chart keeps: a
// chart has few combinations of enabled subcharts in use at once. Past
// the bound the set used least recently goes, so that objects that
// toggle subcharts cannot pin stale sets, nor make every render of a new
// combination parse the chart again.
const maxSets = 32

// setCache is the template sets of the enabled charts' combinations in
// use, by key (the enabled charts' paths), least recently used evicted.
type setCache struct {
	mu    sync.Mutex
	byKey map[string]*list.Element
	order list.List // of *cachedSet, most recently used first
}

type cachedSet struct {
	key string
	set *render.Set
}

// get is the set of key, now the most recently used.
func (c *setCache) get(key string) (*render.Set, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedSet).set, true
}

// add keeps set for key and returns the set kept: one added meanwhile by
// another render of the same combination wins, so that renders share it.
func (c *setCache) add(key string, set *render.Set) *render.Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cachedSet).set
	}
	if c.byKey == nil {
		c.byKey = map[string]*list.Element{}
	}
	c.byKey[key] = c.order.PushFront(&cachedSet{key: key, set: set})
	for c.order.Len() > maxSets {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cachedSet).key)
	}
	return set
}

// len is how many sets are kept.
func (c *setCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
