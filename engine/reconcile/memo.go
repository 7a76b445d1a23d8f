package reconcile

import (
	"context"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/ownership"
)

// memo remembers, per parent, the resourceVersions its last complete
// reconcile saw, so that a reconcile woken by an event that changed
// nothing the templates read renders nothing:
//
//   - the parent and every child as they were: nothing to do at all;
//   - the parent as it was and only the children's status changed (their
//     generation and hash are the same): the children are as rendered,
//     only status.yaml runs again.
//
// It holds nothing the cluster does not: only resourceVersions, hashes and
// names of cluster objects, rebuilt by the first reconcile after a restart.
// Only reconciles whose render read nothing but the parent are remembered:
// no lookups, no clock, no random values, no requeue, nothing held back.
//
// Health is part of it: a child's health is a function of the child (the
// resourceVersion remembered) and of the kind's readyWhen (a reload starts
// a new reconciler, and memo), so "the same" means the same conditions. The
// children that wait for their dependencies are remembered as waiting: the
// status-only path judges the health of the children they wait for again,
// and runs the full reconcile as soon as one need not wait any more.
type memo struct {
	mu    sync.Mutex
	byUID map[types.UID]*memoEntry
}

type memoEntry struct {
	parentRV string
	children []memoChild
	// dependsOn is the plan's order (Plan.DependsOn), for regate.
	dependsOn map[string][]string
}

type memoChild struct {
	key apply.Key
	// state is the child as readiness saw it: its template, whether it
	// waited for its dependencies, its health then.
	state childState
	// exists: the child is in the cluster, as rv, generation and hash.
	// A child that waits may not exist yet.
	exists     bool
	rv         string
	generation int64
	hash       string
}

// verdicts of memo.check
const (
	memoMiss = iota
	memoSame
	memoStatusOnly
)

func (m *memo) get(uid types.UID) *memoEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byUID[uid]
}

func (m *memo) put(uid types.UID, e *memoEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byUID == nil {
		m.byUID = map[types.UID]*memoEntry{}
	}
	m.byUID[uid] = e
}

func (m *memo) drop(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byUID, uid)
}

// check compares the entry with what the caches hold now.
func (e *memoEntry) check(obj *unstructured.Unstructured, a *apply.Applier) int {
	if e == nil || e.parentRV != obj.GetResourceVersion() {
		return memoMiss
	}
	verdict := memoSame
	for i := range e.children {
		c := &e.children[i]
		if !c.exists {
			continue // it waits: only the parent's reconcile creates it
		}
		live, ok := a.Peek(c.key)
		switch {
		case !ok:
			return memoMiss
		case live.GetResourceVersion() == c.rv:
		case c.generation > 0 && live.GetGeneration() == c.generation && live.GetAnnotations()[ownership.AnnotationHash] == c.hash:
			// Only the child's status changed: its spec (generation) and
			// what we applied (hash) did not.
			verdict = memoStatusOnly
		default:
			return memoMiss
		}
	}
	return verdict
}

// adopt takes into obj the resourceVersion of written, the object as this
// reconcile's own write of obj (its metadata or status) left it, so that
// memo remembers the version the write's event brings to the cache. Only
// when written shows no change by anyone else since obj was read: the API
// server answers with the newest version, which holds a spec or label
// change made meanwhile as well, and remembering that version as
// reconciled would skip the change for good (its event finds the parent
// "as it was"). Otherwise obj keeps the version read, and the next event
// misses memo and reconciles. ours are the finalizers and annotations the
// write itself set.
func adopt(obj *unstructured.Unstructured, written metav1.Object, ours ...string) {
	if written.GetResourceVersion() == "" ||
		written.GetGeneration() != obj.GetGeneration() ||
		!maps.Equal(written.GetLabels(), obj.GetLabels()) ||
		!maps.Equal(without(written.GetAnnotations(), ours), without(obj.GetAnnotations(), ours)) ||
		!slices.Equal(withoutItems(written.GetFinalizers(), ours), withoutItems(obj.GetFinalizers(), ours)) ||
		!written.GetDeletionTimestamp().Equal(obj.GetDeletionTimestamp()) {
		return
	}
	obj.SetResourceVersion(written.GetResourceVersion())
}

// without is m less the keys in drop (m itself when it has none of them).
func without(m map[string]string, drop []string) map[string]string {
	var out map[string]string
	for _, k := range drop {
		if _, ok := m[k]; ok {
			if out == nil {
				out = maps.Clone(m)
			}
			delete(out, k)
		}
	}
	if out == nil {
		return m
	}
	return out
}

// withoutItems is s less the items in drop.
func withoutItems(s, drop []string) []string {
	return slices.DeleteFunc(slices.Clone(s), func(v string) bool { return slices.Contains(drop, v) })
}

// Forget drops what is remembered of a parent (memo, and its last status
// written), when it is deleted.
func (r *Reconciler) Forget(uid types.UID) {
	r.memo.drop(uid)
	r.written.drop(uid)
}

// fromMemo answers from what the last complete reconcile of obj saw, when
// it can: nothing changed (nothing to do), or only the children's status
// (only the status step). done reports whether it answered.
func (r *Reconciler) fromMemo(ctx context.Context, obj *unstructured.Unstructured) (done bool, err error) {
	if r.memoizable() {
		switch r.memo.get(obj.GetUID()).check(obj, r.Applier) {
		case memoSame:
			r.Stats.add(&r.Stats.Unchanged)
			return true, nil
		case memoStatusOnly:
			if ok, err := r.statusOnly(ctx, obj); ok {
				return true, err
			}
		}
	}
	r.memo.drop(obj.GetUID())
	return false, nil
}

// memoizable reports whether renders of this kind read nothing but their
// object (no lookups), a condition for remembering them (see memo).
func (r *Reconciler) memoizable() bool { return len(r.Kind.Spec.Lookups) == 0 }

// remember records what a complete reconcile of obj saw: every planned
// child, in apply order, with whether it waits; the resourceVersions of
// those that exist.
func (r *Reconciler) remember(obj *unstructured.Unstructured, desired []*apply.Desired, lives []*unstructured.Unstructured, states []childState, dependsOn map[string][]string) {
	e := &memoEntry{parentRV: obj.GetResourceVersion(), children: make([]memoChild, len(desired)), dependsOn: dependsOn}
	for i, d := range desired {
		c := memoChild{key: d.Key, state: states[i]}
		if live := lives[i]; live != nil {
			c.exists, c.rv, c.generation, c.hash = true, live.GetResourceVersion(), live.GetGeneration(), live.GetAnnotations()[ownership.AnnotationHash]
		}
		e.children[i] = c
	}
	r.memo.put(obj.GetUID(), e)
}
