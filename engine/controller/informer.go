package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// startInformer runs an informer of gvr in ns (all namespaces when "")
// filtered by a label selector, until ctx is done. on is called for every
// real change (not for resyncs), with deleted set on deletions.
func startInformer(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, selector string,
	on func(obj *unstructured.Unstructured, deleted bool)) cache.SharedIndexInformer {
	inf := dynamicinformer.NewFilteredDynamicInformer(dyn, gvr, ns, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		func(o *metav1.ListOptions) { o.LabelSelector = selector }).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				on(u, false)
			}
		},
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*unstructured.Unstructured)
			c, ok2 := cur.(*unstructured.Unstructured)
			if ok1 && ok2 && o.GetResourceVersion() != c.GetResourceVersion() {
				on(c, false)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				on(u, true)
			}
		},
	})
	go inf.Run(ctx.Done())
	return inf
}
