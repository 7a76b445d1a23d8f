package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/ownership"
)

// startInformer runs an informer of gvr in ns (all namespaces when "")
// filtered by a label selector, until ctx is done. on is called for every
// real change (not for resyncs), with deleted set on deletions. Objects are
// cached compact (cached.Object), without their managedFields.
func startInformer(ctx context.Context, lw *cached.Client, gvr schema.GroupVersionResource, ns, selector string,
	indexers cache.Indexers, on func(obj *cached.Object, deleted bool)) cache.SharedIndexInformer {
	inf := newInformer(lw, gvr, ns, selector, indexers)
	if on != nil {
		_, _ = inf.AddEventHandler(handler(func(obj any, deleted bool) {
			if c, ok := obj.(*cached.Object); ok {
				on(c, deleted)
			}
		}))
	}
	go inf.Run(ctx.Done())
	return inf
}

// newInformer is an informer of any resource that caches compact objects,
// decoded from the API server's JSON straight into what the cache keeps.
func newInformer(lw *cached.Client, gvr schema.GroupVersionResource, ns, selector string, indexers cache.Indexers) cache.SharedIndexInformer {
	if indexers == nil {
		indexers = cache.Indexers{}
	}
	indexers[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc
	return cache.NewSharedIndexInformer(lw.ListWatch(gvr, ns, func(o *metav1.ListOptions) { o.LabelSelector = selector }),
		&cached.Object{}, 0, indexers)
}

// startMetadataInformer runs a metadata-only informer of gvr in ns whose
// cache keeps, of each object, only what deciding ownership reads.
func startMetadataInformer(ctx context.Context, md metadata.Interface, gvr schema.GroupVersionResource, ns, selector string,
	on func(obj *metav1.PartialObjectMetadata, deleted bool)) cache.SharedIndexInformer {
	inf := metadatainformer.NewFilteredMetadataInformer(md, gvr, ns, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = selector }).Informer()
	_ = inf.SetTransform(ownershipStub)
	_, _ = inf.AddEventHandler(handler(func(obj any, deleted bool) {
		if p, ok := obj.(*metav1.PartialObjectMetadata); ok {
			on(p, deleted)
		}
	}))
	go inf.Run(ctx.Done())
	return inf
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

// ownershipStub keeps of an object's metadata what ownership.Claim reads:
// the cache of every object of a child's kind costs a few hundred bytes an
// object, whatever the objects hold.
func ownershipStub(obj any) (any, error) {
	p, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	stub := &metav1.PartialObjectMetadata{TypeMeta: p.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
		OwnerReferences: p.OwnerReferences, DeletionTimestamp: p.DeletionTimestamp,
	}}
	if v, ok := p.Labels[ownership.LabelManagedBy]; ok {
		stub.Labels = map[string]string{ownership.LabelManagedBy: v}
	}
	if v, ok := p.Annotations[ownership.AnnotationParent]; ok {
		stub.Annotations = map[string]string{ownership.AnnotationParent: v}
	}
	return stub, nil
}
