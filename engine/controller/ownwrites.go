package controller

import (
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/reconcile"
)

// ownWrites lets a reconcile read its parent at least as new as this
// process's own last write of it. The watch brings a write's event some
// milliseconds after the write's response; a reconcile that ran in
// between (a retry after a failure, another worker's turn) would read the
// parent from before the write, compare its status with that stale one,
// and skip a write the server needed: a failure's ApplyFailed written,
// then Reconciled found "unchanged" on the snapshot from before it, stayed
// on the object for good (the sharding chaos run). A chart's parent read
// without its pre-delete record would run its hooks twice.
//
// The invariant, the only one, in one place:
//
//	a reconcile reads the object of a name no older than the watch's, nor
//	than what this process's last write to that name returned; after a
//	write whose outcome is unknown (it failed: it may or may not have been
//	applied), it reads it from the API server.
//
// An entry lives only until the watch holds a version at least as new
// (seen, from the watch's own events), or the object is gone (forget): it
// is what the cluster answered, never older than the watch, and gone as
// soon as the watch shows it. So nothing kept here can disagree with the
// cluster for longer than a watch event takes; at rest it holds nothing.
//
// Resource versions are compared as integers, as client-go's
// MutationCache (NewIntegerResourceVersionMutationCache) compares them: an
// API server backed by etcd writes them so. One that cannot be read as an
// integer is taken as older than anything, so the watch's object wins.
type ownWrites struct {
	mu sync.Mutex
	by map[cache.ObjectName]ownWrite
}

// ownWrite is what the last write of one object tells: the object it
// returned (written), that it may or may not have been applied (unknown),
// or that a read after such a write found the object gone (gone).
type ownWrite struct {
	state writeState
	uid   types.UID      // of the object written
	obj   *cached.Object // the response, as the watch keeps objects; when written
}

type writeState int

const (
	written writeState = iota
	unknown
	gone
)

// loadFrom says where a reconcile reads its object (newest).
type loadFrom int

const (
	fromWatch   loadFrom = iota // the watch's object
	fromWritten                 // the last write's response
	fromServer                  // the API server: the last write's outcome is unknown
	nowhere                     // the object is gone, the watch has not shown it yet
)

var _ reconcile.ParentWrites = (*ownWrites)(nil)

func newOwnWrites() *ownWrites {
	return &ownWrites{by: map[cache.ObjectName]ownWrite{}}
}

// Wrote records the object a write of the parent returned (a
// *cached.Object, as kube.Client's status writes return, or the
// *unstructured.Unstructured of its other writes and reads). An older
// response (two writes answered out of order) never replaces a newer one.
func (w *ownWrites) Wrote(obj metav1.Object) {
	c, ok := obj.(*cached.Object)
	if !ok {
		u, isU := obj.(*unstructured.Unstructured)
		if !isU {
			w.Unknown(obj) // nothing to keep: read it again next time
			return
		}
		var err error
		if c, err = cached.FromUnstructured(u.DeepCopy()); err != nil {
			klog.Background().V(2).Info("Write of a parent not kept; its next reconcile reads it from the API server", "err", err.Error())
			w.Unknown(obj)
			return
		}
	}
	key := cache.MetaObjectToName(c)
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.by[key]; ok && e.state == written && version(e.obj) > version(c) {
		return
	}
	w.by[key] = ownWrite{state: written, uid: c.GetUID(), obj: c}
}

// Unknown records a write of obj whose outcome is unknown: until a write
// succeeds again, obj is read from the API server.
func (w *ownWrites) Unknown(obj metav1.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.by[cache.MetaObjectToName(obj)] = ownWrite{state: unknown, uid: obj.GetUID()}
}

// newest says where to read the object of key that the watch holds as
// watched, and gives the last write's response when that is where:
//
//   - no write kept, or one the watch shows already (its version or a
//     newer one: versions count every write of the resource, whatever the
//     object): the watch's;
//   - a write the watch does not show yet: the write's response (of
//     another object than watched when watched was deleted and the name
//     created again since: the watch has not shown that yet either);
//   - a write whose outcome is unknown: the API server (readLive then
//     records what it read);
//   - the object watched, which the API server said was gone: none.
func (w *ownWrites) newest(key cache.ObjectName, watched metav1.Object) (loadFrom, *cached.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.by[key]
	if !ok {
		return fromWatch, nil
	}
	switch e.state {
	case unknown:
		// Whatever object the watch holds: a write by name lands on the
		// one the server holds.
		return fromServer, nil
	case gone:
		if watched.GetUID() == e.uid {
			return nowhere, nil
		}
	default:
		if version(watched) < version(e.obj) {
			return fromWritten, e.obj
		}
	}
	delete(w.by, key)
	return fromWatch, nil
}

// readLive records what a read from the API server found (live; nil: not
// found) after a write whose outcome was unknown, of the object the watch
// holds as watched: kept as a write's response is, unless the watch
// already shows it.
func (w *ownWrites) readLive(key cache.ObjectName, live *unstructured.Unstructured, watched metav1.Object) {
	switch {
	case live == nil:
		w.mu.Lock()
		w.by[key] = ownWrite{state: gone, uid: watched.GetUID()}
		w.mu.Unlock()
	case version(watched) >= version(live):
		w.mu.Lock()
		delete(w.by, key)
		w.mu.Unlock()
	default:
		w.Wrote(live)
	}
}

// seen drops the entry the watch's event of obj makes useless: a write
// that obj's version shows, or the record that an object was gone once
// the watch holds another.
func (w *ownWrites) seen(obj metav1.Object) {
	key := cache.MetaObjectToName(obj)
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.by[key]
	if !ok {
		return
	}
	if e.state == written && version(obj) >= version(e.obj) || e.state == gone && obj.GetUID() != e.uid {
		delete(w.by, key)
	}
}

// forget drops the entry of obj, deleted: whatever was written of it, or
// a write of the name older than the deletion.
func (w *ownWrites) forget(obj metav1.Object) {
	key := cache.MetaObjectToName(obj)
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.by[key]
	if ok && (e.uid == obj.GetUID() || e.state == written && version(obj) >= version(e.obj)) {
		delete(w.by, key)
	}
}

// len is the number of entries, for tests.
func (w *ownWrites) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.by)
}

// version is obj's resourceVersion as a number; 0 when it is none.
func version(obj metav1.Object) uint64 {
	v, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		return 0
	}
	return v
}
