package kube

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/engine/cached"
)

// The metadata-only calls: the watches of what the engine reads only the
// metadata of, and the shard labels, which the sharder reads and moves
// (engine/shard) without the objects' content.

// errNoMetadata: a Client of fakes made without a metadata client.
var errNoMetadata = errors.New("no metadata client (a Client of fakes made without one)")

// metadataOf is the metadata client of gvr in ns ("" for all namespaces,
// or for a cluster-scoped resource).
func (c *Client) metadataOf(gvr schema.GroupVersionResource, ns string) (metadata.ResourceInterface, error) {
	if c.metadata == nil {
		return nil, errNoMetadata
	}
	return c.metadata.Resource(gvr).Namespace(ns), nil
}

// ListMetadata lists the metadata of the objects of gvr in ns live.
func (c *Client) ListMetadata(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	ri, err := c.metadataOf(gvr, ns)
	if err != nil {
		return nil, err
	}
	return marked(ri.List(ctx, opts))
}

// WatchMetadata watches the metadata of the objects of gvr in ns.
func (c *Client) WatchMetadata(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	ri, err := c.metadataOf(gvr, ns)
	if err != nil {
		return nil, err
	}
	return marked(ri.Watch(ctx, opts))
}

// PatchMetadata sends a JSON merge patch of metadata (the shard labels) to
// the object ns/name of gvr, as the field manager, and returns the
// object's metadata as written.
func (c *Client) PatchMetadata(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, patch []byte) (*metav1.PartialObjectMetadata, error) {
	ri, err := c.metadataOf(gvr, ns)
	if err != nil {
		return nil, err
	}
	return marked(ri.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: c.fieldManager}))
}

// MetadataListWatch is ListWatch of the objects' metadata only
// (metav1.PartialObjectMetadata), as k8s.io/client-go/metadata serves it.
func (c *Client) MetadataListWatch(gvr schema.GroupVersionResource, ns, selector string) cache.ListerWatcher {
	if c.metadata == nil {
		return cached.DynamicMetadataListWatch(c.dynamic, gvr, ns, selector)
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			l, err := c.ListMetadata(ctx, gvr, ns, o)
			if err != nil {
				return nil, err // not a typed nil in an interface
			}
			return l, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return c.WatchMetadata(ctx, gvr, ns, o)
		},
	}, c.metadata)
}
