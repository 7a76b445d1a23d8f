package reconcile

import (
	"encoding/json"
	"hash/fnv"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// written remembers, per parent, the last status this process wrote and
// the resourceVersion the write produced. A reconcile compares its status
// with its snapshot of the object, and the snapshot may not show the last
// write yet: a reconcile that failed wrote ApplyFailed, and its retry 5 ms
// later, on a cache still holding the Reconciled status from before, found
// its own Reconciled "unchanged" and wrote nothing. The status-only event
// that brings ApplyFailed to the cache reconciles nothing, so the failure
// stayed on the object for good (the sharding chaos run, with its proxies'
// injected faults).
//
// Only a reconcile's own snapshot may drop the entry: one at the version
// the write produced, or one whose status is what was written. The watch's
// event of the write must not: it may arrive while the retry runs on the
// snapshot it read before, and that retry would then trust its stale
// status again (the chaos run found that too, once on CI and in 1 run of
// 23 here).
//
// It holds a fingerprint, not the status: about a hundred bytes an object,
// for the objects whose last write no reconcile has seen since.
type written struct {
	mu    sync.Mutex
	byUID map[types.UID]writtenStatus
}

type writtenStatus struct {
	rv  string // "" when the write's outcome is unknown (it failed)
	sum uint64 // fingerprint of the status written
}

// seen drops the entry of uid when a reconcile's snapshot is at the
// version its last write produced: the snapshot's status is that write's.
func (w *written) seen(uid types.UID, resourceVersion string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.byUID[uid]; ok && e.rv != "" && e.rv == resourceVersion {
		delete(w.byUID, uid)
	}
}

// upToDate reports, for a snapshot obj whose status already is desired,
// whether the server's is too: nothing was written since obj was read, or
// the last write was desired itself. In both cases the snapshot shows what
// the server holds, and later snapshots (never older) can be trusted: the
// entry goes.
func (w *written) upToDate(obj *unstructured.Unstructured, desired map[string]any) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.byUID[obj.GetUID()]
	switch {
	case !ok:
		return true
	case e.rv != "" && (e.rv == obj.GetResourceVersion() || e.sum == statusSum(desired)):
		delete(w.byUID, obj.GetUID())
		return true
	}
	return false
}

// wrote records a write of desired that produced resourceVersion rv;
// rv "" records a write whose outcome is unknown: until the next write
// succeeds, every status is written.
func (w *written) wrote(uid types.UID, rv string, desired map[string]any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byUID == nil {
		w.byUID = map[types.UID]writtenStatus{}
	}
	e := writtenStatus{rv: rv}
	if rv != "" {
		e.sum = statusSum(desired)
	}
	w.byUID[uid] = e
}

func (w *written) drop(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byUID, uid)
}

// statusSum is a hash of the status's JSON (map keys sorted).
func statusSum(status map[string]any) uint64 {
	data, err := json.Marshal(status)
	if err != nil {
		return 0 // never equal to a real status's: the status is written
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return h.Sum64()
}
