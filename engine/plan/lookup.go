package plan

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
)

// liveLookup is what one parent's render may read, read live: the same
// policy as the operator's cached lookups (kind.yaml's declarations,
// catalog.Kind.ResolveLookup, the operator's bounds), without informers,
// which a one-shot plan would only pay for.
type liveLookup struct {
	ctx    context.Context
	client *kube.Client
	kind   *catalog.Kind
	bounds ownership.Bounds
	parent string // the parent's namespace
}

var _ render.Lookup = (*liveLookup)(nil)

// resolve returns the mapping to read, the namespace, and the declared
// lookup's own selector, which bounds what the operator's cache of the
// kind holds.
func (l *liveLookup) resolve(apiVersion, kind, namespace string) (*meta.RESTMapping, string, string, error) {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	declared := false
	for _, g := range l.kind.LookupGVKs() {
		if g.GroupKind() == gvk.GroupKind() {
			gvk, declared = g, true
		}
	}
	var m *meta.RESTMapping
	namespaced := false
	if declared {
		var err error
		if m, err = l.client.Mapping(gvk); err != nil {
			return nil, "", "", fmt.Errorf("lookups: %w", err)
		}
		namespaced = m.Scope.Name() == meta.RESTScopeNameNamespace
		if namespaced {
			if err := l.bounds.Check(namespace); err != nil {
				return nil, "", "", fmt.Errorf("%w: %s: %v", render.ErrLookupRefused, gvk.GroupKind(), err)
			}
		}
	}
	spec, namespace, err := l.kind.ResolveLookup(gvk.GroupKind(), namespaced, namespace, l.parent)
	if err != nil {
		return nil, "", "", err
	}
	return m, namespace, spec.LookupSelector(), nil
}

// Get implements render.Lookup.
func (l *liveLookup) Get(apiVersion, kind, namespace, name string) (map[string]any, error) {
	m, namespace, own, err := l.resolve(apiVersion, kind, namespace)
	if err != nil {
		return nil, err
	}
	o, err := l.client.Get(l.ctx, m, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if own != "" {
		sel, err := labels.Parse(own)
		if err != nil || !sel.Matches(labels.Set(o.GetLabels())) {
			return nil, err // outside what the operator's cache holds
		}
	}
	return o.Object, nil
}

// List implements render.Lookup, sorted by namespace and name as the
// operator's are.
func (l *liveLookup) List(apiVersion, kind, namespace, selector string) ([]map[string]any, error) {
	m, namespace, own, err := l.resolve(apiVersion, kind, namespace)
	if err != nil {
		return nil, err
	}
	if _, err := labels.Parse(selector); err != nil {
		return nil, fmt.Errorf("%w: selector %q: %v", render.ErrLookupRefused, selector, err)
	}
	switch {
	case own == "":
	case selector == "":
		selector = own
	default:
		selector = own + "," + selector
	}
	list, err := l.client.List(l.ctx, m, namespace, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool {
		if items[i].GetNamespace() != items[j].GetNamespace() {
			return items[i].GetNamespace() < items[j].GetNamespace()
		}
		return items[i].GetName() < items[j].GetName()
	})
	out := make([]map[string]any, 0, len(items))
	for _, o := range items {
		if l.bounds.Check(o.GetNamespace()) != nil {
			continue // a list of all namespaces never shows the operator's own
		}
		out = append(out, o.Object)
	}
	return out, nil
}
