package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

// appState is what the bench knows of one BenchApp and its Deployment.
type appState struct {
	size       int64 // spec.size
	generation int64
	observed   int64 // status.observedGeneration
	reconciled bool  // a Reconciled=True condition
	replicas   int64 // the Deployment's spec.replicas, -1 without one
}

// converged reports whether the app's status is written for its
// generation, and, when wantReplicas >= 0, whether its Deployment has them.
func (a appState) converged(wantReplicas int64) bool {
	if a.observed != a.generation || !a.reconciled {
		return false
	}
	return wantReplicas < 0 || a.size == wantReplicas && a.replicas == wantReplicas
}

// tracker watches the BenchApps of a namespace and their Deployments (one
// LIST and one WATCH each, started before a measured phase and so outside
// its request counts) and tells when they converge. Every time is the
// moment the event reached the bench.
type tracker struct {
	stop context.CancelFunc

	mu      sync.Mutex
	apps    map[string]*appState
	changed chan struct{} // closed and replaced on every change

	// The goal of a phase: every app converged(want).
	want     int64
	done     map[string]bool
	first    time.Time // of the first app to reach the goal
	last     time.Time // of the last app to reach it
	complete int       // apps at the goal
}

func startTracker(ctx context.Context, dyn dynamic.Interface, ns string) (*tracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &tracker{stop: cancel, apps: map[string]*appState{}, changed: make(chan struct{}), want: -1, done: map[string]bool{}}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	apps := factory.ForResource(benchapp.GVR).Informer()
	deps := factory.ForResource(benchapp.DeploymentGVR).Informer()
	onApp := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			t.update(u.GetName(), func(a *appState) { readApp(u, a) })
		}
	}
	onDep := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			t.update(u.GetName(), func(a *appState) { a.replicas = r })
		}
	}
	for inf, on := range map[cache.SharedIndexInformer]func(any){apps: onApp, deps: onDep} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: on, UpdateFunc: func(_, cur any) { on(cur) },
		}); err != nil {
			cancel()
			return nil, fmt.Errorf("watch %s: %w", ns, err)
		}
	}
	factory.Start(ctx.Done())
	for gvr, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			return nil, fmt.Errorf("watch %s in %s: not synced", gvr.Resource, ns)
		}
	}
	return t, nil
}

func readApp(u *unstructured.Unstructured, a *appState) {
	a.size, _, _ = unstructured.NestedInt64(u.Object, "spec", "size")
	a.generation = u.GetGeneration()
	a.observed, _, _ = unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	a.reconciled = false
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok && c["type"] == "Reconciled" && c["status"] == string(metav1.ConditionTrue) {
			a.reconciled = true
		}
	}
}

func (t *tracker) update(name string, f func(*appState)) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.apps[name]
	if a == nil {
		a = &appState{replicas: -1}
		t.apps[name] = a
	}
	f(a)
	if !t.done[name] && a.converged(t.want) {
		t.done[name] = true
		t.complete++
		if t.first.IsZero() {
			t.first = now
		}
		t.last = now
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// goal starts a phase: from now on, count the apps that reach
// converged(want) (want -1: status only). Apps already there count, at no
// time of their own.
func (t *tracker) goal(want int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.want, t.first, t.last, t.complete = want, time.Time{}, time.Time{}, 0
	t.done = map[string]bool{}
	for name, a := range t.apps {
		if a.converged(want) {
			t.done[name] = true
			t.complete++
		}
	}
}

// waitAll waits until n apps have reached the goal and returns when the
// first and the last of them did.
func (t *tracker) waitAll(ctx context.Context, n int) (first, last time.Time, err error) {
	for {
		t.mu.Lock()
		complete, ch := t.complete, t.changed
		first, last = t.first, t.last
		t.mu.Unlock()
		if complete >= n {
			return first, last, nil
		}
		select {
		case <-ctx.Done():
			return first, last, fmt.Errorf("%d of %d objects converged: %w", complete, n, ctx.Err())
		case <-ch:
		}
	}
}

// waitOne waits until app name has converged(want).
func (t *tracker) waitOne(ctx context.Context, name string, want int64) error {
	for {
		t.mu.Lock()
		a, ch := t.apps[name], t.changed
		ok := a != nil && a.converged(want)
		t.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not converged to size %d: %w", name, want, ctx.Err())
		case <-ch:
		}
	}
}

// state returns a copy of what the bench knows of app name.
func (t *tracker) state(name string) appState {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a := t.apps[name]; a != nil {
		return *a
	}
	return appState{replicas: -1}
}

// maxSize is the largest spec.size of all apps.
func (t *tracker) maxSize() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var m int64
	for _, a := range t.apps {
		m = max(m, a.size)
	}
	return m
}
