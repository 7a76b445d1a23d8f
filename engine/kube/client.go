package kube

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/tmplop/operator/engine/cached"
)

// Client makes the cluster calls of one kind.
type Client struct {
	Dynamic dynamic.Interface
	// Cached lists and watches for the informers, into compact objects.
	Cached *cached.Client
	Mapper meta.ResettableRESTMapper
	// FieldManager is the server-side apply field manager of every write.
	FieldManager string
	// Identity is the user the client impersonates ("" for the operator's
	// own): caches are never shared between identities.
	Identity string

	// lastReset is when the mapper's discovery was last reset (unix nanos).
	lastReset atomic.Int64
}

// resetInterval bounds how often a mapping miss may reset the discovery
// cache: a reset costs a request per API group, and a template that
// renders a kind no API serves would otherwise cost that on every
// reconcile of every object.
const resetInterval = 10 * time.Second

// New returns a Client for cfg with its own cached discovery.
func New(cfg *rest.Config, fieldManager string) (*Client, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("http client: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	watches, err := cached.NewClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	return &Client{Dynamic: dyn, Cached: watches, Mapper: mapper, FieldManager: fieldManager}, nil
}

// Impersonating returns a Client whose every call impersonates user, with
// its own discovery: what the user may not see, it does not see either.
func Impersonating(cfg *rest.Config, fieldManager, user string) (*Client, error) {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user}
	cl, err := New(c, fieldManager)
	if err != nil {
		return nil, err
	}
	cl.Identity = user
	return cl, nil
}

// Mapping returns the resource and scope of gvk. A miss resets the cached
// discovery and asks again, so a CRD installed after start-up is seen; at
// most once per resetInterval, so that a kind nobody serves fails fast
// instead of rediscovering every API group each time.
func (c *Client) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) && c.mayReset() {
		c.Mapper.Reset()
		m, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("map %s: no such kind is served (is its CRD installed?): %w", gvk, err)
		}
		return nil, fmt.Errorf("map %s: %w", gvk, err)
	}
	return m, nil
}

func (c *Client) mayReset() bool {
	now := time.Now().UnixNano()
	last := c.lastReset.Load()
	return now-last >= int64(resetInterval) && c.lastReset.CompareAndSwap(last, now)
}

// Preferred returns the mapping of m's group and kind at the version the
// API server prefers: every version of a resource is one set of objects,
// watched once.
func (c *Client) Preferred(m *meta.RESTMapping) (*meta.RESTMapping, error) {
	p, err := c.Mapper.RESTMapping(m.GroupVersionKind.GroupKind())
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", m.GroupVersionKind.GroupKind(), err)
	}
	return p, nil
}

// Namespaced reports whether gvk is a namespaced kind.
func (c *Client) Namespaced(gvk schema.GroupVersionKind) (bool, error) {
	m, err := c.Mapping(gvk)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// Resource is the dynamic client of a mapped kind in namespace ns (ignored
// for cluster-scoped kinds).
func (c *Client) Resource(m *meta.RESTMapping, ns string) dynamic.ResourceInterface {
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(m.Resource).Namespace(ns)
	}
	return c.Dynamic.Resource(m.Resource)
}

// Apply server-side applies obj, forcing ownership of the fields it holds,
// and returns the object as the API server stored it.
func (c *Client) Apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	m, err := c.Mapping(obj.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	return c.ApplyMapped(ctx, m, obj)
}

// ApplyMapped is Apply for an object whose mapping the caller has.
func (c *Client) ApplyMapped(ctx context.Context, m *meta.RESTMapping, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.Resource(m, obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, c.applyOptions())
}

// ApplyStatus server-side applies obj's status through the status
// subresource.
func (c *Client) ApplyStatus(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	m, err := c.Mapping(obj.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	return c.Resource(m, obj.GetNamespace()).ApplyStatus(ctx, obj.GetName(), obj, c.applyOptions())
}

// Apply with Force: the operator is the authority on the fields it renders;
// whoever else set them (a hand edit, an old manager) loses them, which is
// how drift is repaired.
func (c *Client) applyOptions() metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: c.FieldManager, Force: true}
}

// Delete deletes the object of gvk ns/name only if its UID is still uid, in
// the background. Deleting what is already gone is not an error.
func (c *Client) Delete(ctx context.Context, gvk schema.GroupVersionKind, ns, name string, uid types.UID) error {
	m, err := c.Mapping(gvk)
	if err != nil {
		return err
	}
	err = c.Resource(m, ns).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: ptr.To(uid)},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Patch sends a merge patch to the main resource (used for finalizers, which
// must not be server-side applied with Force: other controllers own theirs).
func (c *Client) Patch(ctx context.Context, gvk schema.GroupVersionKind, ns, name string, pt types.PatchType, data []byte) (*unstructured.Unstructured, error) {
	m, err := c.Mapping(gvk)
	if err != nil {
		return nil, err
	}
	return c.Resource(m, ns).Patch(ctx, name, pt, data, metav1.PatchOptions{FieldManager: c.FieldManager})
}
