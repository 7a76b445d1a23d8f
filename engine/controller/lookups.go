package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/render"
)

// parentRef is a parent object, for routing events to its kind's queue.
type parentRef struct {
	gk  schema.GroupKind
	key string // namespace/name
}

// read is one lookup a parent made in its last reconcile.
type read struct {
	namespace string // "" for cluster-scoped kinds or all namespaces
	name      string // "" for lists
	selector  labels.Selector
}

func (r read) matches(o *unstructured.Unstructured) bool {
	if r.namespace != "" && o.GetNamespace() != r.namespace {
		return false
	}
	if r.name != "" {
		return o.GetName() == r.name
	}
	return r.selector.Matches(labels.Set(o.GetLabels()))
}

// lookupWatches serves the templates' lookups from informer caches, one
// unfiltered informer per declared resource, and remembers who read what, so
// that a change re-reconciles exactly the parents whose render it could
// change (a Pod turning Ready updates the Memcached that lists its Pods).
type lookupWatches struct {
	ctx       context.Context
	dyn       dynamic.Interface
	namespace string
	route     func(p parentRef)

	mu        sync.Mutex
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
	reads     map[schema.GroupVersionResource]map[parentRef][]read
}

// ensure starts the informer of m's resource and returns it.
func (w *lookupWatches) ensure(m *meta.RESTMapping) cache.SharedIndexInformer {
	w.mu.Lock()
	defer w.mu.Unlock()
	if inf, ok := w.informers[m.Resource]; ok {
		return inf
	}
	ns := metav1.NamespaceAll
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns = w.namespace
	}
	gvr := m.Resource
	inf := startInformer(w.ctx, w.dyn, gvr, ns, "", func(u *unstructured.Unstructured, _ bool) { w.changed(gvr, u) })
	w.informers[gvr] = inf
	return inf
}

func (w *lookupWatches) changed(gvr schema.GroupVersionResource, o *unstructured.Unstructured) {
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

// forget drops the reads of a parent that is gone.
func (w *lookupWatches) forget(p parentRef) {
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

// errLookupRefused is a lookup kind.yaml does not allow: terminal.
var errLookupRefused = errors.New("lookup refused")

// kindLookups is what one kind may read.
type kindLookups struct {
	w       *lookupWatches
	client  *kube.Client
	allowed map[schema.GroupKind]catalog.LookupSpec
}

// prepare starts the informers of every declared lookup and waits for them
// to sync, so that renders never read a partial cache.
func (k *kindLookups) prepare(ctx context.Context, kind *catalog.Kind) error {
	var synced []cache.InformerSynced
	for _, l := range kind.Spec.Lookups {
		m, err := k.client.Mapping(schema.FromAPIVersionAndKind(l.APIVersion, l.Kind))
		if err != nil {
			return fmt.Errorf("lookups: %w", err)
		}
		synced = append(synced, k.w.ensure(m).HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("lookups: caches did not sync: %w", ctx.Err())
	}
	return nil
}

// forParent returns the render.Lookup of one reconcile of parent. It starts
// afresh the record of what the parent reads.
func (k *kindLookups) forParent(parent *unstructured.Unstructured) render.Lookup {
	p := parentRef{gk: parent.GroupVersionKind().GroupKind(), key: cacheKey(parent.GetNamespace(), parent.GetName())}
	k.w.forget(p)
	return &parentLookup{k: k, parent: parent, ref: p}
}

type parentLookup struct {
	k      *kindLookups
	parent *unstructured.Unstructured
	ref    parentRef
}

var _ render.Lookup = (*parentLookup)(nil)

// resolve checks a lookup against kind.yaml and the parent's namespace and
// returns the informer that serves it.
func (l *parentLookup) resolve(apiVersion, kind, namespace string) (cache.SharedIndexInformer, *meta.RESTMapping, string, error) {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	spec, ok := l.k.allowed[gvk.GroupKind()]
	if !ok {
		return nil, nil, "", fmt.Errorf("%w: %s is not declared in kind.yaml lookups", errLookupRefused, gvk.GroupKind())
	}
	m, err := l.k.client.Mapping(gvk)
	if err != nil {
		return nil, nil, "", err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = ""
	} else if namespace != l.parent.GetNamespace() && !spec.AllNamespaces {
		where := fmt.Sprintf("namespace %q", namespace)
		if namespace == "" {
			where = "all namespaces"
		}
		return nil, nil, "", fmt.Errorf("%w: %s in %s is outside the parent's namespace %q (kind.yaml lookups: allNamespaces: true allows it)",
			errLookupRefused, gvk.GroupKind(), where, l.parent.GetNamespace())
	}
	inf := l.k.w.ensure(m)
	if !inf.HasSynced() {
		return nil, nil, "", fmt.Errorf("lookup %s: %w", gvk.GroupKind(), reconcile.ErrNotReady)
	}
	return inf, m, namespace, nil
}

// Get implements render.Lookup.
func (l *parentLookup) Get(apiVersion, kind, namespace, name string) (map[string]any, error) {
	inf, m, namespace, err := l.resolve(apiVersion, kind, namespace)
	if err != nil {
		return nil, err
	}
	l.k.w.record(m.Resource, l.ref, read{namespace: namespace, name: name})
	o, ok, err := inf.GetIndexer().GetByKey(cacheKey(namespace, name))
	if err != nil || !ok {
		return nil, err
	}
	return o.(*unstructured.Unstructured).Object, nil
}

// List implements render.Lookup. Items are sorted by namespace and name, so
// that renders are deterministic.
func (l *parentLookup) List(apiVersion, kind, namespace, selector string) ([]map[string]any, error) {
	inf, m, namespace, err := l.resolve(apiVersion, kind, namespace)
	if err != nil {
		return nil, err
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("%w: selector %q: %v", errLookupRefused, selector, err)
	}
	l.k.w.record(m.Resource, l.ref, read{namespace: namespace, selector: sel})
	var objs []any
	if namespace != "" {
		objs, err = inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
		if err != nil {
			return nil, err
		}
	} else {
		objs = inf.GetIndexer().List()
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		if sel.Matches(labels.Set(u.GetLabels())) {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	items := make([]map[string]any, len(out))
	for i, u := range out {
		items[i] = u.Object
	}
	return items, nil
}

func cacheKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
