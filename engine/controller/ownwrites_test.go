package controller

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/engine/cached"
)

// ownWritesWorld is a model of one parent as the API server, the watch and
// the reconciler see it, for TestOwnWritesInvariant: the server's object,
// the events the watch has yet to deliver (in order), the watch's store,
// and the reconciler's last write whose response it got.
type ownWritesWorld struct {
	t   *testing.T
	w   *ownWrites
	key cache.ObjectName

	rv      uint64
	uid     int
	server  *unstructured.Unstructured // nil: deleted
	pending []event
	// store is the watch's object; nil: not listed, or deleted.
	store *cached.Object
	// lastOurs is the object our last successful write returned;
	// unknown is the object of a write that failed after it, outcome
	// unknown ("": none).
	lastOurs *unstructured.Unstructured
	unknown  types.UID
}

// event is one the watch has yet to deliver.
type event struct {
	obj     *unstructured.Unstructured
	deleted bool
}

func newWorld(t *testing.T) *ownWritesWorld {
	ws := &ownWritesWorld{t: t, w: newOwnWrites(), key: cache.ObjectName{Namespace: "ns", Name: "p"}}
	ws.create()
	ws.deliverAll()
	return ws
}

func (ws *ownWritesWorld) bump(status string) *unstructured.Unstructured {
	ws.rv++
	o := ws.server.DeepCopy()
	o.SetResourceVersion(strconv.FormatUint(ws.rv, 10))
	o.Object["status"] = map[string]any{"s": status}
	ws.server = o
	ws.pending = append(ws.pending, event{obj: o})
	return o
}

func (ws *ownWritesWorld) create() {
	ws.uid++
	ws.rv++
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("e.io/v1")
	o.SetKind("P")
	o.SetNamespace("ns")
	o.SetName("p")
	o.SetUID(types.UID(fmt.Sprint("u", ws.uid)))
	o.SetResourceVersion(strconv.FormatUint(ws.rv, 10))
	ws.server = o
	ws.pending = append(ws.pending, event{obj: o})
}

// remove deletes the server's object: its deletion is a version too.
func (ws *ownWritesWorld) remove() {
	ws.rv++
	o := ws.server.DeepCopy()
	o.SetResourceVersion(strconv.FormatUint(ws.rv, 10))
	ws.server = nil
	ws.pending = append(ws.pending, event{obj: o, deleted: true})
}

func (ws *ownWritesWorld) deliver() {
	if len(ws.pending) == 0 {
		return
	}
	e := ws.pending[0]
	ws.pending = ws.pending[1:]
	if e.deleted {
		ws.store = nil
		ws.w.forget(e.obj)
		if e.obj.GetUID() == ws.unknown {
			ws.unknown = "" // nothing of the write is left to read
		}
		return
	}
	c, err := cached.FromUnstructured(e.obj.DeepCopy())
	if err != nil {
		ws.t.Fatal(err)
	}
	ws.store = c
	ws.w.seen(c)
}

func (ws *ownWritesWorld) deliverAll() {
	for len(ws.pending) > 0 {
		ws.deliver()
	}
}

// read is what a reconcile reads (kindController.load), checked against
// the invariant: never older than the watch's object nor than the last
// write of ours whose response came, for the same object; the server's
// own after a write of unknown outcome.
func (ws *ownWritesWorld) read(step string) *unstructured.Unstructured {
	if ws.store == nil {
		return nil // the watch holds nothing: nothing to reconcile
	}
	from, written := ws.w.newest(ws.key, ws.store)
	var got *unstructured.Unstructured
	switch from {
	case fromServer:
		var live *unstructured.Unstructured
		if ws.server != nil {
			live = ws.server.DeepCopy()
		}
		ws.w.readLive(ws.key, live, ws.store)
		if live == nil {
			// Gone: no reconcile until the watch shows it, whatever the
			// watch holds meanwhile.
			ws.unknown, ws.lastOurs = "", nil
			return nil
		}
		got = live
		ws.lastOurs, ws.unknown = got, ""
	case nowhere:
		if ws.server != nil && ws.server.GetUID() == ws.store.GetUID() {
			ws.t.Fatalf("%s: nothing to reconcile while the server holds %s", step, ws.server.GetUID())
		}
		return nil
	case fromWritten:
		u, err := written.Object()
		if err != nil {
			ws.t.Fatal(err)
		}
		got = u
	default:
		u, err := ws.store.Object()
		if err != nil {
			ws.t.Fatal(err)
		}
		got = u
	}
	if from != fromServer && ws.unknown != "" {
		ws.t.Fatalf("%s: read %s at %s from a cache after a write of unknown outcome", step, got.GetUID(), got.GetResourceVersion())
	}
	if version(got) < version(ws.store) {
		ws.t.Fatalf("%s: read version %s, older than the watch's %s", step, got.GetResourceVersion(), ws.store.GetResourceVersion())
	}
	if ws.lastOurs != nil && version(got) < version(ws.lastOurs) {
		ws.t.Fatalf("%s: read version %s, older than our last write's %s", step, got.GetResourceVersion(), ws.lastOurs.GetResourceVersion())
	}
	return got
}

// TestOwnWritesInvariant shuffles the events of one parent (our writes,
// answered or failed; someone else's writes; the watch's deliveries, late
// by any number of events; deletions and re-creations) and checks, at
// every read, the invariant of ownwrites.go, and that once the watch has
// delivered everything nothing is kept but the record of a write whose
// outcome is unknown.
func TestOwnWritesInvariant(t *testing.T) {
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 7))
		ws := newWorld(t)
		for step := range 60 {
			name := fmt.Sprintf("seed %d step %d", seed, step)
			switch op := rng.IntN(10); {
			case op < 2 && ws.server != nil: // a reconcile's write, answered
				if ws.read(name) == nil {
					continue
				}
				// By name, as status writes are: it lands on whatever
				// object of that name the server holds.
				o := ws.bump(fmt.Sprint("ours", step))
				ws.w.Wrote(o.DeepCopy())
				ws.lastOurs, ws.unknown = o, ""
			case op == 2 && ws.server != nil: // a reconcile's write fails, applied or not
				read := ws.read(name)
				if read == nil {
					continue
				}
				if rng.IntN(2) == 0 {
					ws.bump(fmt.Sprint("lost", step))
				}
				ws.w.Unknown(read)
				ws.unknown = read.GetUID()
			case op == 3 && ws.server != nil: // someone else's write
				ws.bump(fmt.Sprint("theirs", step))
			case op == 4 && ws.server != nil && rng.IntN(4) == 0: // deleted
				ws.remove()
			case op == 4 && ws.server == nil: // created again
				ws.create()
			case op < 8:
				ws.deliver()
			default:
				ws.read(name)
			}
		}
		ws.deliverAll()
		ws.read(fmt.Sprintf("seed %d at rest", seed))
		if n := ws.w.len(); n != 0 {
			t.Fatalf("seed %d: %d entries kept once the watch delivered everything and a reconcile read", seed, n)
		}
	}
}

// TestOwnWritesOutOfOrder: an older response never replaces a newer one;
// versions order the writes of a name whatever the object (deleted and
// created again).
func TestOwnWritesOutOfOrder(t *testing.T) {
	w := newOwnWrites()
	obj := func(uid string, rv int) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion("e.io/v1")
		o.SetKind("P")
		o.SetNamespace("ns")
		o.SetName("p")
		o.SetUID(types.UID(uid))
		o.SetResourceVersion(strconv.Itoa(rv))
		return o
	}
	key := cache.ObjectName{Namespace: "ns", Name: "p"}
	watch := func(uid string, rv int) metav1.Object { return obj(uid, rv) }
	w.Wrote(obj("a", 9))
	w.Wrote(obj("a", 7))
	if from, got := w.newest(key, watch("a", 5)); from != fromWritten || got.GetResourceVersion() != "9" {
		t.Fatalf("newest = %v %v, want the write at version 9", from, got)
	}
	w.Wrote(obj("b", 12))
	if from, got := w.newest(key, watch("b", 11)); from != fromWritten || got.GetUID() != "b" {
		t.Fatalf("newest = %v %v, want object b", from, got)
	}
	if from, got := w.newest(key, watch("a", 9)); from != fromWritten || got.GetUID() != "b" {
		t.Fatalf("newest = %v %v with the watch holding the object deleted before b: want b", from, got)
	}
	if from, _ := w.newest(key, watch("c", 14)); from != fromWatch {
		t.Fatalf("newest = %v with the watch holding an object newer than b: want the watch's", from)
	}
	if w.len() != 0 {
		t.Fatalf("%d entries kept", w.len())
	}
}
