package controller

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/render"
)

// parentRef is a parent object, for routing events to its kind's queue.
type parentRef struct {
	gk   schema.GroupKind
	name cache.ObjectName
}

// read is one lookup a parent made in its last reconcile.
type read struct {
	namespace string // "" for cluster-scoped kinds or all namespaces
	name      string // "" for lists
	selector  labels.Selector
}

func (r read) matches(o metav1.Object) bool {
	if r.namespace != "" && o.GetNamespace() != r.namespace {
		return false
	}
	if r.name != "" {
		return o.GetName() == r.name
	}
	return r.selector.Matches(labels.Set(o.GetLabels()))
}

// lookupInformer is a lookup cache (a watch of the set: a resource in one
// namespace, "" for all or for cluster-scoped kinds, with an optional
// label selector, as the reader's identity) and the parents that read it;
// it is released when the last of them is gone.
type lookupInformer struct {
	watch *watchHandle
	users map[parentRef]bool
}

// lookupWatches serves the templates' lookups from informer caches cut to
// what is needed: a namespaced kind is cached only in the namespaces of
// the parents that read it (unless kind.yaml says allNamespaces), only
// with the labels kind.yaml's selector names, and only while such a parent
// exists. Nothing that no kind.yaml declares is ever cached (Secrets
// included). It also remembers who read what, so that a change
// re-reconciles exactly the parents whose render it could change.
type lookupWatches struct {
	set       *watchSet
	base      *kube.Client // the operator's own
	namespace string       // the operator's --namespace, "" for all
	route     func(p parentRef)

	mu        sync.Mutex
	informers map[watchKey]*lookupInformer
	reads     map[schema.GroupVersionResource]map[parentRef][]read
}

// acquire returns the cache of key, read as client's identity, started
// if needed, for user.
func (w *lookupWatches) acquire(key watchKey, user parentRef, client *kube.Client) *watchHandle {
	client = w.client(client)
	key.identity = client.Identity()
	w.mu.Lock()
	defer w.mu.Unlock()
	li, ok := w.informers[key]
	if !ok {
		gvr := key.gvr
		li = &lookupInformer{users: map[parentRef]bool{},
			watch: w.set.acquire(client, key, nil, handler(onObject(func(c *cached.Object, _ bool) { w.changed(gvr, c) })))}
		w.informers[key] = li
	}
	li.users[user] = true
	return li.watch
}

// client is the client a cache of c's identity lists and watches with.
func (w *lookupWatches) client(c *kube.Client) *kube.Client {
	if c == nil || c.Identity() == "" {
		return w.base
	}
	return c
}

func (w *lookupWatches) changed(gvr schema.GroupVersionResource, o metav1.Object) {
	var hit []parentRef
	w.mu.Lock()
	for p, rs := range w.reads[gvr] {
		for _, r := range rs {
			if r.matches(o) {
				hit = append(hit, p)
				break
			}
		}
	}
	w.mu.Unlock()
	for _, p := range hit {
		w.route(p)
	}
}

// forget drops what p read, and the caches only p used.
func (w *lookupWatches) forget(p parentRef) {
	w.forgetWhere(func(q parentRef) bool { return q == p })
}

// forgetKind drops every parent of gk: its kind stopped.
func (w *lookupWatches) forgetKind(gk schema.GroupKind) {
	w.forgetWhere(func(q parentRef) bool { return q.gk == gk })
}

func (w *lookupWatches) forgetWhere(match func(parentRef) bool) {
	var unused []*watchHandle
	defer func() {
		for _, h := range unused {
			h.release()
		}
	}()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, byParent := range w.reads {
		for q := range byParent {
			if match(q) {
				delete(byParent, q)
			}
		}
	}
	for key, li := range w.informers {
		for q := range li.users {
			if match(q) {
				delete(li.users, q)
			}
		}
		if len(li.users) == 0 {
			unused = append(unused, li.watch)
			delete(w.informers, key)
		}
	}
}

func (w *lookupWatches) resetReads(p parentRef) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, byParent := range w.reads {
		delete(byParent, p)
	}
}

func (w *lookupWatches) record(gvr schema.GroupVersionResource, p parentRef, r read) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reads[gvr] == nil {
		w.reads[gvr] = map[parentRef][]read{}
	}
	w.reads[gvr][p] = append(w.reads[gvr][p], r)
}

// kindLookups is what one kind may read. It implements reconcile.Lookups.
type kindLookups struct {
	w      *lookupWatches
	client *kube.Client
	// kind holds the lookup policy (catalog.Kind.ResolveLookup) and the
	// declared lookups.
	kind *catalog.Kind
	// bounds refuse reads in the operator's own namespaces.
	bounds ownership.Bounds
}

var _ reconcile.Lookups = (*kindLookups)(nil)

// resolved is one declared lookup, ready for a parent.
type resolved struct {
	spec    catalog.LookupSpec
	mapping *meta.RESTMapping
	inf     cache.SharedIndexInformer // nil: the parent may not read this kind anywhere
}

// For implements reconcile.Lookups: it starts the caches parent may read
// and waits for them to list, so that a render never reads a partial cache
// (an empty list that is only a cache still listing would make children
// vanish). A kind not served yet is an error to retry, not a dead kind.
func (k *kindLookups) For(ctx context.Context, parent *unstructured.Unstructured) (render.Lookup, error) {
	p := parentRef{gk: parent.GroupVersionKind().GroupKind(), name: cache.MetaObjectToName(parent)}
	k.w.resetReads(p)
	l := &parentLookup{k: k, parent: parent, ref: p, allowed: map[schema.GroupKind]*resolved{}}
	var synced []cache.InformerSynced
	for _, spec := range k.kind.Spec.Lookups {
		gvk := schema.FromAPIVersionAndKind(spec.APIVersion, spec.Kind)
		m, err := k.client.Mapping(gvk)
		if err != nil {
			return nil, fmt.Errorf("lookups: %w", err)
		}
		r := &resolved{spec: spec, mapping: m}
		l.allowed[gvk.GroupKind()] = r
		key := watchKey{gvr: m.Resource, selector: spec.LookupSelector()}
		switch {
		case m.Scope.Name() != meta.RESTScopeNameNamespace:
		case spec.AllNamespaces:
			key.namespace = k.w.namespace
		case parent.GetNamespace() == "":
			continue // a cluster-scoped parent has no namespace to read in
		default:
			key.namespace = parent.GetNamespace()
		}
		h := k.w.acquire(key, p, k.client)
		r.inf = h.informer()
		synced = append(synced, h.hasSynced)
	}
	if len(synced) > 0 {
		if !waitSynced(ctx, synced...) {
			return nil, fmt.Errorf("lookup caches have not listed their objects: %w", reconcile.ErrNotReady)
		}
	}
	return l, nil
}

type parentLookup struct {
	k       *kindLookups
	parent  *unstructured.Unstructured
	ref     parentRef
	allowed map[schema.GroupKind]*resolved
}

var _ render.Lookup = (*parentLookup)(nil)

// resolve checks a lookup against kind.yaml and the parent's namespace and
// returns the cache that serves it and the namespace to read.
func (l *parentLookup) resolve(apiVersion, kind, namespace string) (*resolved, string, error) {
	gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
	r, declared := l.allowed[gk]
	namespaced := declared && r.mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if namespaced {
		if err := l.k.bounds.Check(namespace); err != nil {
			return nil, "", fmt.Errorf("%w: %s: %v", render.ErrLookupRefused, gk, err)
		}
	}
	_, namespace, err := l.k.kind.ResolveLookup(gk, namespaced, namespace, l.parent.GetNamespace())
	if err != nil {
		return nil, "", err
	}
	return r, namespace, nil
}

// Get implements render.Lookup.
func (l *parentLookup) Get(apiVersion, kind, namespace, name string) (map[string]any, error) {
	r, namespace, err := l.resolve(apiVersion, kind, namespace)
	if err != nil {
		return nil, err
	}
	l.k.w.record(r.mapping.Resource, l.ref, read{namespace: namespace, name: name})
	o, ok, err := r.inf.GetIndexer().GetByKey(objectKey(namespace, name))
	if err != nil || !ok {
		return nil, err
	}
	u, err := o.(*cached.Object).Object()
	if err != nil {
		return nil, err
	}
	return u.Object, nil
}

// List implements render.Lookup. Items are sorted by namespace and name, so
// that renders are deterministic.
func (l *parentLookup) List(apiVersion, kind, namespace, selector string) ([]map[string]any, error) {
	r, namespace, err := l.resolve(apiVersion, kind, namespace)
	if err != nil {
		return nil, err
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("%w: selector %q: %v", render.ErrLookupRefused, selector, err)
	}
	l.k.w.record(r.mapping.Resource, l.ref, read{namespace: namespace, selector: sel})
	var objs []any
	if namespace != "" {
		objs, err = r.inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
		if err != nil {
			return nil, err
		}
	} else {
		objs = r.inf.GetIndexer().List()
	}
	var out []*cached.Object
	for _, o := range objs {
		c := o.(*cached.Object)
		if l.k.bounds.Check(c.GetNamespace()) != nil {
			continue // a list of all namespaces never shows the operator's own
		}
		if sel.Matches(labels.Set(c.GetLabels())) {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	items := make([]map[string]any, len(out))
	for i, c := range out {
		u, err := c.Object()
		if err != nil {
			return nil, err
		}
		items[i] = u.Object
	}
	return items, nil
}
