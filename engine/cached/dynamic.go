package cached

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// The list and watch of this file go through a dynamic client instead of
// the API server's JSON: they serve informers on a fake dynamic client
// (k8s.io/client-go/dynamic/fake) in unit tests, where there is no JSON to
// decode. The operator's own informers use Client.

// DynamicListWatch lists and watches gvr in ns ("" for all) through dyn,
// into Objects, keeping the objects that match the label selector.
func DynamicListWatch(dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, selector string) cache.ListerWatcher {
	return dynamicListWatch(dyn, gvr, ns, selector, func(u *unstructured.Unstructured) (runtime.Object, error) {
		return FromUnstructured(u.DeepCopy())
	}, func(rv string, items []runtime.Object) runtime.Object {
		l := &List{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: make([]Object, len(items))}
		for i, o := range items {
			l.Items[i] = *o.(*Object)
		}
		return l
	})
}

// DynamicMetadataListWatch is DynamicListWatch into the objects' metadata,
// as a metadata-only watch (k8s.io/client-go/metadata) delivers them.
func DynamicMetadataListWatch(dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, selector string) cache.ListerWatcher {
	return dynamicListWatch(dyn, gvr, ns, selector, func(u *unstructured.Unstructured) (runtime.Object, error) {
		p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(metadataOf(u), &p.ObjectMeta); err != nil {
			return nil, fmt.Errorf("metadata of %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		return p, nil
	}, func(rv string, items []runtime.Object) runtime.Object {
		l := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: make([]metav1.PartialObjectMetadata, len(items))}
		for i, o := range items {
			l.Items[i] = *o.(*metav1.PartialObjectMetadata)
		}
		return l
	})
}

func metadataOf(u *unstructured.Unstructured) map[string]any {
	md, _ := u.Object["metadata"].(map[string]any)
	return runtime.DeepCopyJSON(md)
}

// dynamicListWatch lists and watches through dyn, turning each object into
// what the informer caches (item) and a list of them into its list type.
// The selector is applied here too: a fake client's watch ignores it, and
// the children's watches rely on it to split the operator's objects from
// the others' (an object that stops matching is deleted, as the API server
// tells it).
func dynamicListWatch(dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, selector string,
	item func(*unstructured.Unstructured) (runtime.Object, error), list func(rv string, items []runtime.Object) runtime.Object) cache.ListerWatcher {
	ri := dyn.Resource(gvr).Namespace(ns)
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			sel, err := labels.Parse(selector)
			if err != nil {
				return nil, err
			}
			o.LabelSelector = selector
			l, err := ri.List(ctx, o)
			if err != nil {
				return nil, err
			}
			var items []runtime.Object
			for i := range l.Items {
				if !sel.Matches(labels.Set(l.Items[i].GetLabels())) {
					continue
				}
				obj, err := item(&l.Items[i])
				if err != nil {
					return nil, err
				}
				items = append(items, obj)
			}
			return list(l.GetResourceVersion(), items), nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			sel, err := labels.Parse(selector)
			if err != nil {
				return nil, err
			}
			o.LabelSelector = selector
			w, err := ri.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					return ev, true
				}
				if !sel.Matches(labels.Set(u.GetLabels())) {
					if ev.Type != watch.Modified && ev.Type != watch.Deleted {
						return ev, false
					}
					ev.Type = watch.Deleted
				}
				obj, err := item(u)
				if err != nil {
					return watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}}, true
				}
				ev.Object = obj
				return ev, true
			}), nil
		},
	}, dyn)
}
