package shard

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Resource is what the sharder needs of the objects of one kind: their
// metadata, listed and watched across namespaces with the options given
// (the sharder sets the label selector), and a JSON merge patch of one of
// them. It is narrow on purpose: the sharder needs no more than the
// labels.
type Resource interface {
	List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	// Patch applies a JSON merge patch to the object namespace/name
	// (namespace "" for a cluster-scoped kind). The error is the API
	// server's, so that apierrors.IsConflict and IsNotFound see it.
	Patch(ctx context.Context, namespace, name string, patch []byte) error
}

// Metadata is the door's metadata-only calls (engine/kube's Client, the
// kind's: its account lists and patches its objects and children
// already), whose errors are marked as every call of the engine is.
type Metadata interface {
	ListMetadata(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	WatchMetadata(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (watch.Interface, error)
	PatchMetadata(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, patch []byte) (*metav1.PartialObjectMetadata, error)
}

// MetadataResource is the Resource of gvr through client, in namespace
// ("" for all), of the objects that match selector ("" for all) as well
// as the sharder's own selector: a kind's objects are those its folder
// selects, in the namespaces the operator watches.
func MetadataResource(client Metadata, gvr schema.GroupVersionResource, namespace, selector string) Resource {
	return metadataResource{client: client, gvr: gvr, namespace: namespace, selector: selector}
}

type metadataResource struct {
	client    Metadata
	gvr       schema.GroupVersionResource
	namespace string
	selector  string
}

var _ Resource = metadataResource{}

// confine adds the resource's own selector to the sharder's.
func (r metadataResource) confine(opts metav1.ListOptions) metav1.ListOptions {
	switch {
	case r.selector == "":
	case opts.LabelSelector == "":
		opts.LabelSelector = r.selector
	default:
		opts.LabelSelector += "," + r.selector
	}
	return opts
}

func (r metadataResource) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return r.client.ListMetadata(ctx, r.gvr, r.namespace, r.confine(opts))
}

func (r metadataResource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return r.client.WatchMetadata(ctx, r.gvr, r.namespace, r.confine(opts))
}

func (r metadataResource) Patch(ctx context.Context, namespace, name string, patch []byte) error {
	_, err := r.client.PatchMetadata(ctx, r.gvr, namespace, name, patch)
	if err != nil {
		return fmt.Errorf("patch %s %s: %w", r.gvr.Resource, objectName(namespace, name), err)
	}
	return nil
}

// objectName is namespace/name, or name alone for a cluster-scoped object.
func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// HandOverTo labels obj, which this replica's shard holds, for shard to: the
// holder's one write of a move (Decide's HandOver; the name HandOver is the
// Verb's), on the condition that
// obj is still at the resourceVersion it was decided on. Call it only from
// the worker of obj's key, after that worker stopped reconciling obj: the
// write is the drain handshake, and the new holder starts as soon as it
// sees the label. A Conflict means obj changed (or the sharder moved it)
// since: read it again and decide again.
func HandOverTo(ctx context.Context, res Resource, obj metav1.Object, to string) error {
	patch, err := AssignPatch(to, obj.GetResourceVersion())
	if err != nil {
		return fmt.Errorf("hand %s over to shard %s: %w", objectName(obj.GetNamespace(), obj.GetName()), to, err)
	}
	if err := res.Patch(ctx, obj.GetNamespace(), obj.GetName(), patch); err != nil {
		return fmt.Errorf("hand %s over to shard %s: %w", objectName(obj.GetNamespace(), obj.GetName()), to, err)
	}
	return nil
}
