package controller

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/ownership"
)

// What the watch of the operator's own children keeps of each object.
//
// The watch selects on the managed-by label, which whoever may create an
// object can write: 80 ConfigMaps of 1 MB in a namespace of their own,
// labelled so and owned by no parent, took the operator from 40 to 181 MiB,
// and a restart listed them all again. So the label only gets an object into
// the watch. It is kept whole (its JSON) when it is matched to a parent this
// process serves: its parent annotation names a served kind, that kind's
// watch holds the parent now with the UID of its parent-uid label, and it
// lies in the parent's namespace, unless the kind allows children outside
// it. Anything else is kept as a stub (ownership.StubMeta): every ownership
// check, prune and skip decision reads no more, and it costs a few hundred
// bytes whatever it holds.
//
// Who can still get an object kept whole must be able to read a parent's
// UID and create objects in the parent's namespace: a CR author there, who
// can as well create parents as large as they like.
//
// A child of ours is a stub while its parent is not in the watch of its
// kind: a child changed while its kind restarts, or, sharded, a child
// moved to this shard before its parent. childWatches.Get reads such a
// child from the API server, and the child's next event is judged again.
// A parent is in its watch before the reconcile that creates its children
// reads it there, so a new child is never a stub; at start, a child that
// names a kind whose watch is still listing waits for the list, at most
// syncTimeout after the watch started.

// parentView is what the admission of children reads of one kind's
// objects.
type parentView struct {
	store cache.Store
	// synced reports whether the watch has listed the kind's objects.
	synced func() bool
	// listBy is when a child naming the kind stops waiting for the list:
	// the watch's start plus syncTimeout.
	listBy time.Time
	// outside is the kind's allowClusterScoped: its children may lie
	// outside their parent's namespace.
	outside bool
}

// admission is a verdict of admit.
type admission int

const (
	admitStub  admission = iota // matched to no parent served: the metadata
	admitWhole                  // a child of a parent served: all of it
	admitWait                   // names a kind whose watch is still listing
)

// admit judges child, an object of the watch of the operator's children, at
// now. parents returns the view of a kind served, false for a kind that is
// not (or not yet: its resource is not served).
func admit(child metav1.Object, parents func(schema.GroupKind) (parentView, bool), now time.Time) admission {
	uid := child.GetLabels()[ownership.LabelParentUID]
	p, err := ownership.ParseParent(child.GetAnnotations()[ownership.AnnotationParent])
	if err != nil || uid == "" {
		return admitStub
	}
	view, served := parents(p.GroupKind)
	if !served {
		return admitStub
	}
	// What ownership.Adopt lets a kind write: a namespaced parent's
	// children in its namespace; anything else needs the kind's opt-in.
	if !view.outside && (p.Namespace == "" || child.GetNamespace() != p.Namespace) {
		return admitStub
	}
	if o, ok, err := view.store.GetByKey(objectKey(p.Namespace, p.Name)); err == nil && ok {
		if m, isMeta := o.(metav1.Object); isMeta && string(m.GetUID()) == uid {
			return admitWhole
		}
	}
	if !view.synced() && now.Before(view.listBy) {
		return admitWait
	}
	return admitStub
}

// admitPoll is how often a child that waits for its kind's list looks
// again (waitSynced's interval).
const admitPoll = 10 * time.Millisecond

// admitted is the transform of the watches of the operator's children
// (watchKey.children): each object whole or as a stub, as admit judges.
// It runs on the watch's own goroutine, before the object is stored, so a
// wait for a kind's list holds up that watch only. A stub stays one: the
// watch-list transforms every object twice, and the second time the
// content is gone.
func (w *childWatches) admitted(obj any) (any, error) {
	c, ok := obj.(*cached.Object)
	if !ok || c.Stubbed() {
		return obj, nil
	}
	v := admit(c, w.parents, time.Now())
	if v == admitWait {
		tick := time.NewTicker(admitPoll)
		defer tick.Stop()
		for v == admitWait {
			select {
			case <-w.ctx.Done():
				v = admitStub // stopping: nothing will read it
			case now := <-tick.C:
				v = admit(c, w.parents, now)
			}
		}
	}
	if v == admitWhole {
		return c, nil
	}
	return cached.Stub(c.TypeMeta, ownership.StubMeta(c)), nil
}
