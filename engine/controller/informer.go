package controller

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/ownership"
)

// objectKey is the key of object namespace/name in an informer's cache.
func objectKey(namespace, name string) string {
	return cache.NewObjectName(namespace, name).String()
}

// handler calls on for adds, deletions and updates that changed the
// object (a resync delivers the same resourceVersion).
func handler(on func(obj any, deleted bool)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { on(obj, false) },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(metav1.Object)
			c, ok2 := cur.(metav1.Object)
			if ok1 && ok2 && o.GetResourceVersion() != c.GetResourceVersion() {
				on(cur, false)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			on(obj, true)
		},
	}
}

// onObject calls on with the compact objects of a full watch.
func onObject(on func(c *cached.Object, deleted bool)) func(obj any, deleted bool) {
	return func(obj any, deleted bool) {
		if c, ok := obj.(*cached.Object); ok {
			on(c, deleted)
		}
	}
}

// onMetadata calls on with the objects of a metadata-only watch.
func onMetadata(on func(p *metav1.PartialObjectMetadata)) func(obj any, deleted bool) {
	return func(obj any, _ bool) {
		if p, ok := obj.(*metav1.PartialObjectMetadata); ok {
			on(p)
		}
	}
}

// ownershipStub keeps of an object's metadata what ownership.Claim reads
// (ownership.StubMeta): the cache of every object of a child's kind costs a
// few hundred bytes an object, whatever the objects hold.
func ownershipStub(obj any) (any, error) {
	p, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: p.TypeMeta, ObjectMeta: ownership.StubMeta(p)}, nil
}
