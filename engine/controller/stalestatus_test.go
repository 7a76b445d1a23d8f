package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/tmplop/operator/engine/cached"
)

// TestStatusWriteSeenDuringItsRetry: a reconcile fails and writes
// ApplyFailed; its retry reads the object before the watch brings that
// write, and the write's event arrives while the retry is still running.
// The retry succeeds on a snapshot whose status (Reconciled, from before
// the failure) equals what it would write: only what the process knows
// of its own write tells that the server holds ApplyFailed. An event that
// arrives mid-reconcile must not make it forget that, or ApplyFailed
// stays on the object for good (the sharding chaos run found it: the
// event reconciles nothing, as it changed only the status).
func TestStatusWriteSeenDuringItsRetry(t *testing.T) {
	f := newFakeCluster(t, widget("a", "w1", 3))
	var (
		ctx      context.Context
		mu       sync.Mutex
		failNext bool          // the next ConfigMap apply fails
		holding  bool          // the Widget's next status event is held
		held     []watch.Event // and here it is
		release  = make(chan struct{})
		retried  = make(chan bool, 1) // whether the cache showed the failure
		m        *Manager
	)
	// cachedFailure reports whether the kind's cache shows the failure.
	cachedFailure := func() bool {
		m.mu.Lock()
		kc := m.kinds[widgetGVK.GroupKind()]
		m.mu.Unlock()
		o, ok, _ := kc.objectStore().GetByKey("a/w1")
		if !ok {
			return false
		}
		u, err := o.(*cached.Object).Object()
		return err == nil && reconciledOf(u) == "False"
	}
	f.dyn.PrependReactor("patch", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		fail, retry := failNext, !failNext && holding
		failNext = false
		if retry {
			holding = false
		}
		mu.Unlock()
		switch {
		case fail:
			return true, nil, errors.New("injected")
		case retry:
			// The retry: its snapshot is read. Let the failure's event
			// in, and go on once the informer has handled it: its store
			// shows it, and its handlers run right after.
			close(release)
			for deadline := time.Now().Add(10 * time.Second); !cachedFailure() && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			retried <- cachedFailure()
		}
		return false, nil, nil
	})
	f.dyn.PrependWatchReactor("widgets", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := f.dyn.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		out := make(chan watch.Event)
		go func() {
			defer close(out)
			for ev := range w.ResultChan() {
				mu.Lock()
				hold := holding && ev.Type == watch.Modified && reconciledOf(ev.Object) == "False"
				if hold {
					held = append(held, ev)
				}
				mu.Unlock()
				if hold {
					<-release
				}
				out <- ev
			}
		}()
		return true, &proxyWatch{w: w, out: out}, nil
	})

	m, ctx = newTestManager(t, f, Options{})
	if err := m.SyncFolders(ctx, fakeFolders{loadWidget(t)}); err != nil {
		t.Fatal(err)
	}
	server := func() string { return reconciledOf(f.get(widgetGVR, "a", "w1")) }
	eventually(t, "the first reconcile", func() bool { return server() == "True" })

	mu.Lock()
	failNext, holding = true, true
	mu.Unlock()
	// Deleting the child wakes the parent; applying it again fails once.
	if err := f.dyn.Resource(configMapsGVR).Namespace("a").Delete(ctx, "w1-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case seen := <-retried:
		if !seen {
			t.Fatal("the failure's status never reached the cache during the retry: the test did not set up the race")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no retry after the failed apply")
	}
	mu.Lock()
	n := len(held)
	mu.Unlock()
	if n == 0 {
		t.Fatal("the retry ran with no failure status held back: the test did not set up the race")
	}
	eventually(t, "the retry's status on the server", func() bool { return server() == "True" })
}

// reconciledOf is the status of obj's Reconciled condition, "" if none.
func reconciledOf(obj runtime.Object) string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok && c["type"] == "Reconciled" {
			s, _ := c["status"].(string)
			return s
		}
	}
	return ""
}

// proxyWatch is a watch whose events pass through out.
type proxyWatch struct {
	w   watch.Interface
	out chan watch.Event
}

func (p *proxyWatch) Stop()                          { p.w.Stop() }
func (p *proxyWatch) ResultChan() <-chan watch.Event { return p.out }
