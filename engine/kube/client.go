package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
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
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/tmplop/operator/engine/cached"
)

// Client is the door to the API server: every call of the engine, and of
// each kind, goes through one. Its clients are private, so that every
// mapping goes through Mapping's reset-on-miss, every write carries the
// one field manager, and every error the API server answers is marked
// with what retrying it can do (marks.go). The side doors are named in
// the package doc.
type Client struct {
	dynamic dynamic.Interface
	// lister lists and watches for the informers, into compact objects;
	// nil for a Client of fakes, whose informers go through dynamic.
	lister *cached.Client
	// metadata serves the metadata-only watches and the shard labels
	// (metadata.go); nil for a Client of fakes made without one: its
	// watches go through dynamic, and it cannot write shard labels.
	metadata metadata.Interface
	mapper   meta.ResettableRESTMapper
	// discovery is the mapper's cached discovery, which Cluster reads too.
	discovery discovery.CachedDiscoveryInterface
	// core is the core group's typed client (ConfigMaps, ServiceAccounts,
	// Events): one group, never the whole clientset (see core.go).
	core typedcorev1.CoreV1Interface
	// revisions are the kinds' revision records (revisions.go).
	revisions RevisionAPI
	// authorization asks the authorizer about the client's own identity
	// (Allowed); nil for a Client of fakes made without one.
	authorization authorizationv1client.SelfSubjectAccessReviewsGetter
	// config is what Impersonating copies; nil for a Client of fakes.
	config       *rest.Config
	fieldManager string
	// identity is the user the client impersonates ("" for the operator's
	// own): caches are never shared between identities.
	identity string

	// lastReset is when the mapper's discovery was last reset (unix nanos).
	lastReset atomic.Int64
	// mappings remembers the mapper's answers (mappingKey to
	// *meta.RESTMapping) until the next reset: the mapper takes a lock and
	// walks every group's mappings on each call, several times an object.
	mappings sync.Map
}

// mappingKey is a question to the mapper: a kind at one version, or at
// the preferred one ("").
type mappingKey struct {
	gk      schema.GroupKind
	version string
}

// resetInterval bounds how often a mapping miss may reset the discovery
// cache: a reset costs a request per API group, and a template that
// renders a kind no API serves would otherwise cost that on every
// reconcile of every object.
const resetInterval = 10 * time.Second

// New returns a Client for cfg with its own cached discovery. Nothing is
// asked of the API server until a call needs it.
func New(cfg *rest.Config, fieldManager string) (*Client, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("http client: %w", err)
	}
	c := &Client{config: cfg, fieldManager: fieldManager}
	if err := c.connect(cfg, httpClient); err != nil {
		return nil, err
	}
	return c, nil
}

// connect makes c's clients, all on httpClient: one connection.
func (c *Client) connect(cfg *rest.Config, httpClient *http.Client) error {
	var err error
	if c.dynamic, err = dynamic.NewForConfigAndClient(cfg, httpClient); err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	if c.lister, err = cached.NewClient(cfg, httpClient); err != nil {
		return err
	}
	if c.metadata, err = metadata.NewForConfigAndClient(cfg, httpClient); err != nil {
		return fmt.Errorf("metadata client: %w", err)
	}
	if c.core, err = typedcorev1.NewForConfigAndClient(cfg, httpClient); err != nil {
		return fmt.Errorf("core client: %w", err)
	}
	c.revisions = dynamicRevisions{c.dynamic}
	if c.authorization, err = authorizationv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return fmt.Errorf("authorization client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	c.discovery = memory.NewMemCacheClient(disc)
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(c.discovery)
	return nil
}

// Cluster reads, through the cached discovery, the API server's version
// and what it serves, as group/version and group/version/Kind: what Helm
// charts read as .Capabilities (Helm's action.GetVersionSet). A group
// that failed discovery is left out, as Helm leaves it.
func (c *Client) Cluster() (version string, apiVersions []string, err error) {
	if c.discovery == nil {
		return "", nil, errors.New("no discovery (a client of fakes)")
	}
	v, err := c.discovery.ServerVersion()
	if err != nil {
		return "", nil, fmt.Errorf("server version: %w", err)
	}
	_, lists, err := c.discovery.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return "", nil, fmt.Errorf("discovery: %w", err)
	}
	seen := map[string]bool{}
	for _, l := range lists {
		if !seen[l.GroupVersion] {
			seen[l.GroupVersion] = true
			apiVersions = append(apiVersions, l.GroupVersion)
		}
		for _, r := range l.APIResources {
			if gvk := l.GroupVersion + "/" + r.Kind; !seen[gvk] {
				seen[gvk] = true
				apiVersions = append(apiVersions, gvk)
			}
		}
	}
	slices.Sort(apiVersions)
	return v.GitVersion, apiVersions, nil
}

// Clients are what a Client of fakes is made of (NewForClients), for unit
// tests: k8s.io/client-go/dynamic/fake, a meta.DefaultRESTMapper, the core
// group of k8s.io/client-go/kubernetes/fake.
type Clients struct {
	Dynamic dynamic.Interface
	// Mapper maps kinds; one that is not a meta.ResettableRESTMapper is
	// never reset.
	Mapper meta.RESTMapper
	// Metadata serves the metadata-only watches; nil: Dynamic does.
	Metadata metadata.Interface
	// Core is the core group's typed client; nil when the test needs none.
	Core typedcorev1.CoreV1Interface
	// Revisions serve the ControllerRevisions (internal/testsupport's
	// revisiontest over k8s.io/client-go/kubernetes/fake); nil when the
	// test needs none.
	Revisions RevisionAPI
	// Authorization answers Allowed; nil: every request is allowed.
	Authorization authorizationv1client.SelfSubjectAccessReviewsGetter
}

// NewForClients returns a Client over fakes. Its informers list and watch
// through Dynamic, which a fake serves.
func NewForClients(cs Clients, fieldManager string) *Client {
	mapper, ok := cs.Mapper.(meta.ResettableRESTMapper)
	if !ok && cs.Mapper != nil {
		mapper = neverReset{cs.Mapper}
	}
	return &Client{dynamic: cs.Dynamic, metadata: cs.Metadata, mapper: mapper, core: cs.Core, revisions: cs.Revisions, authorization: cs.Authorization, fieldManager: fieldManager}
}

type neverReset struct{ meta.RESTMapper }

func (neverReset) Reset() {}

// Impersonating returns a Client whose every call impersonates user, with
// its own discovery: what the user may not see, it does not see either. A
// Client of fakes shares its fakes and only takes the identity.
func (c *Client) Impersonating(user string) (*Client, error) {
	if c.config == nil {
		return &Client{dynamic: c.dynamic, metadata: c.metadata, mapper: c.mapper, core: c.core, revisions: c.revisions, authorization: c.authorization,
			fieldManager: c.fieldManager, identity: user}, nil
	}
	cfg := rest.CopyConfig(c.config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	out, err := New(cfg, c.fieldManager)
	if err != nil {
		return nil, err
	}
	out.identity = user
	return out, nil
}

// Identity is the user the client impersonates, "" for the operator's own.
func (c *Client) Identity() string { return c.identity }

// FieldManager is the server-side apply field manager of every write.
func (c *Client) FieldManager() string { return c.fieldManager }

// Mapping returns the resource and scope of gvk. A miss resets the cached
// discovery and asks again, so a CRD installed after start-up is seen; at
// most once per resetInterval, so that a kind nobody serves fails fast
// instead of rediscovering every API group each time.
func (c *Client) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := c.restMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("map %s: no such kind is served (is its CRD installed?): %w", gvk, err)
		}
		return nil, fmt.Errorf("map %s: %w", gvk, err)
	}
	return m, nil
}

// PreferredKind returns the mapping of gk at the version the API server
// prefers, with Mapping's reset-on-miss; meta.IsNoMatchError tells a kind
// that is not served.
func (c *Client) PreferredKind(gk schema.GroupKind) (*meta.RESTMapping, error) {
	m, err := c.restMapping(gk)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", gk, err)
	}
	return m, nil
}

// ResourceMapping returns the mapping of the resource gr (what a command
// is given as <resource>.<group>) at the version the API server prefers,
// with Mapping's reset-on-miss; meta.IsNoMatchError tells a resource that
// is not served.
func (c *Client) ResourceMapping(gr schema.GroupResource) (*meta.RESTMapping, error) {
	gvk, err := c.mapper.KindFor(gr.WithVersion(""))
	if meta.IsNoMatchError(err) && c.mayReset() {
		c.mapper.Reset()
		c.mappings.Clear()
		gvk, err = c.mapper.KindFor(gr.WithVersion(""))
	}
	if err != nil {
		return nil, fmt.Errorf("map the resource %s: %w", gr, err)
	}
	// KindFor answers the version the API server prefers.
	return c.Mapping(gvk)
}

// Preferred returns the mapping of m's group and kind at the version the
// API server prefers: every version of a resource is one set of objects,
// watched once.
func (c *Client) Preferred(m *meta.RESTMapping) (*meta.RESTMapping, error) {
	return c.PreferredKind(m.GroupVersionKind.GroupKind())
}

func (c *Client) restMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key, cacheable := mappingKey{gk: gk}, len(versions) <= 1
	if len(versions) == 1 {
		key.version = versions[0]
	}
	if cacheable {
		if m, ok := c.mappings.Load(key); ok {
			return m.(*meta.RESTMapping), nil
		}
	}
	m, err := c.mapper.RESTMapping(gk, versions...)
	if meta.IsNoMatchError(err) && c.mayReset() {
		c.mapper.Reset()
		// What was remembered came from the discovery just dropped.
		c.mappings.Clear()
		m, err = c.mapper.RESTMapping(gk, versions...)
	}
	if err == nil && cacheable {
		c.mappings.Store(key, m)
	}
	return m, err
}

func (c *Client) mayReset() bool {
	now := time.Now().UnixNano()
	last := c.lastReset.Load()
	return now-last >= int64(resetInterval) && c.lastReset.CompareAndSwap(last, now)
}

// Namespaced reports whether gvk is a namespaced kind.
func (c *Client) Namespaced(gvk schema.GroupVersionKind) (bool, error) {
	m, err := c.Mapping(gvk)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// resource is the dynamic client of a mapped kind in namespace ns (ignored
// for cluster-scoped kinds; "" for all namespaces).
func (c *Client) resource(m *meta.RESTMapping, ns string) dynamic.ResourceInterface {
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dynamic.Resource(m.Resource).Namespace(ns)
	}
	return c.dynamic.Resource(m.Resource)
}

// Get reads the object ns/name of a mapped kind live.
func (c *Client) Get(ctx context.Context, m *meta.RESTMapping, ns, name string) (*unstructured.Unstructured, error) {
	return marked(c.resource(m, ns).Get(ctx, name, metav1.GetOptions{}))
}

// List lists the objects of a mapped kind live, in namespace ns ("" for
// all namespaces).
func (c *Client) List(ctx context.Context, m *meta.RESTMapping, ns string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return marked(c.resource(m, ns).List(ctx, opts))
}

// ListWatch is an informer's list and watch of gvr in ns ("" for all, or
// for a cluster-scoped resource) filtered by a label selector, into
// compact objects (cached.Object).
func (c *Client) ListWatch(gvr schema.GroupVersionResource, ns, selector string) cache.ListerWatcher {
	if c.lister == nil {
		return cached.DynamicListWatch(c.dynamic, gvr, ns, selector)
	}
	return c.lister.ListWatch(gvr, ns, func(o *metav1.ListOptions) { o.LabelSelector = selector })
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
	if c.lister == nil { // a Client of fakes
		return marked(c.resource(m, obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, c.applyOptions()))
	}
	raw, err := c.applyRaw(ctx, m, obj, "")
	if err != nil {
		return nil, err
	}
	// Decoded without its managedFields, which the engine never reads and
	// which are a third of a child's bytes (docs/performance.md).
	return cached.Applied(raw)
}

// applyRaw applies obj, or its subresource, and returns the response
// undecoded.
func (c *Client) applyRaw(ctx context.Context, m *meta.RESTMapping, obj *unstructured.Unstructured, subresource string) ([]byte, error) {
	body, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	ns := obj.GetNamespace()
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	opts := c.applyOptions()
	return marked(c.lister.Apply(ctx, m.Resource, ns, obj.GetName(), subresource, body, opts.ToPatchOptions()))
}

// ApplyStatus server-side applies obj's status through the status
// subresource, and returns the object the write produced (a
// *cached.Object, but for a Client of fakes).
func (c *Client) ApplyStatus(ctx context.Context, obj *unstructured.Unstructured) (metav1.Object, error) {
	m, err := c.Mapping(obj.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	if c.lister == nil { // a Client of fakes
		return marked(c.resource(m, obj.GetNamespace()).ApplyStatus(ctx, obj.GetName(), obj, c.applyOptions()))
	}
	raw, err := c.applyRaw(ctx, m, obj, "status")
	if err != nil {
		return nil, err
	}
	// As the watch will bring it: the writer reads its metadata, and the
	// next reconcile the whole object if the watch has not brought it yet.
	return cached.Written(raw)
}

// Apply with Force: the operator is the authority on the fields it renders;
// whoever else set them (a hand edit, an old manager) loses them, which is
// how drift is repaired.
func (c *Client) applyOptions() metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: c.fieldManager, Force: true}
}

// Delete deletes the object of gvk ns/name only if its UID is still uid, in
// the background. Deleting what is already gone is not an error.
func (c *Client) Delete(ctx context.Context, gvk schema.GroupVersionKind, ns, name string, uid types.UID) error {
	m, err := c.Mapping(gvk)
	if err != nil {
		return err
	}
	err = c.resource(m, ns).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: ptr.To(uid)},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	_, err = marked(struct{}{}, err)
	return err
}

// Patch sends a patch of type pt to the main resource, as the field
// manager, not forced (used for finalizers, which must not be server-side
// applied with Force: other controllers own theirs).
func (c *Client) Patch(ctx context.Context, gvk schema.GroupVersionKind, ns, name string, pt types.PatchType, data []byte) (*unstructured.Unstructured, error) {
	m, err := c.Mapping(gvk)
	if err != nil {
		return nil, err
	}
	return c.PatchMapped(ctx, m, ns, name, pt, data)
}

// PatchMapped is Patch for a resource whose mapping the caller has: the
// CRD installer's apply of a CRD, which must not be forced either (another
// manager's fields are a conflict to report, not values to take).
func (c *Client) PatchMapped(ctx context.Context, m *meta.RESTMapping, ns, name string, pt types.PatchType, data []byte) (*unstructured.Unstructured, error) {
	return marked(c.resource(m, ns).Patch(ctx, name, pt, data, metav1.PatchOptions{FieldManager: c.fieldManager}))
}
