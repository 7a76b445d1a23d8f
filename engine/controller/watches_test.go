package controller

import (
	"sync/atomic"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// TestWatchSet: users of one key share one informer, counted; another
// namespace, selector, identity or a metadata-only watch is another
// informer; each user's handler is removed with its release, and the
// informer stops with the last one.
func TestWatchSet(t *testing.T) {
	f := newFakeCluster(t, widget("a", "w1", 1), widget("b", "w2", 1))
	s := newWatchSet(t.Context())
	key := watchKey{gvr: widgetGVR, namespace: "a"}
	var first, second atomic.Int32
	count := func(n *atomic.Int32) cache.ResourceEventHandler {
		return handler(func(any, bool) { n.Add(1) })
	}
	h1 := s.acquire(f.client, key, nil, count(&first))
	h2 := s.acquire(f.client, key, cache.Indexers{parentUIDIndex: byParentUID}, count(&second))
	if h1.informer() != h2.informer() || s.size() != 1 {
		t.Fatalf("one key, %d informers", s.size())
	}
	if _, ok := h1.informer().GetIndexer().GetIndexers()[parentUIDIndex]; !ok {
		t.Fatal("the second user's index was not added")
	}
	eventually(t, "both handlers sent the listed object", func() bool {
		return h1.hasSynced() && h2.hasSynced() && first.Load() == 1 && second.Load() == 1
	})

	as, err := f.client.Impersonating("system:serviceaccount:ops:kinds")
	if err != nil {
		t.Fatal(err)
	}
	others := []*watchHandle{
		s.acquire(f.client, watchKey{gvr: widgetGVR}, nil, nil),
		s.acquire(f.client, watchKey{gvr: widgetGVR, namespace: "a", selector: "x=y"}, nil, nil),
		s.acquire(as, key, nil, nil),
		s.acquire(f.client, watchKey{gvr: widgetGVR, namespace: "a", metadata: true}, nil, nil),
	}
	if s.size() != 5 {
		t.Fatalf("%d informers, want 5: namespace, selector, identity and metadata each make another", s.size())
	}
	if others[2].key.identity != "system:serviceaccount:ops:kinds" {
		t.Fatalf("identity %q: the key's identity is the client's", others[2].key.identity)
	}
	for _, h := range others {
		h.release()
	}

	h1.release()
	h1.release() // twice is once
	if h2.informer().IsStopped() || s.size() != 1 {
		t.Fatal("released by one user, stopped for the other")
	}
	w := widget("a", "w3", 1)
	if _, err := f.dyn.Tracker().Get(widgetGVR, "a", "w1"); err != nil {
		t.Fatal(err)
	}
	if err := f.dyn.Tracker().Create(widgetGVR, w, "a"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the remaining user sent the new object", func() bool { return second.Load() == 2 })
	if first.Load() != 1 {
		t.Errorf("a released handler was sent %d events", first.Load())
	}
	h2.release()
	if s.size() != 0 {
		t.Fatalf("%d informers after the last release", s.size())
	}
	eventually(t, "the informer stopped", h2.informer().IsStopped)
}
