// Package fakelookup is a render.Lookup for tests: a fixed list of objects
// served as the informer caches serve them to templates (by apiVersion,
// kind, namespace, name or label selector), with the folder's lookup policy
// asked first when the test gives one. Renders then run offline and in
// microseconds: engine/render's golden tests, test/examples.
//
// It does not import engine/render (render's own tests use it), and only
// _test.go files import it, so it never reaches the operator's binary.
package fakelookup

import (
	"k8s.io/apimachinery/pkg/labels"
)

// Objects serves Items. The zero value serves nothing and refuses nothing.
type Objects struct {
	// Items are the objects in the cluster, decoded as the API server
	// sends them (whole numbers as int64).
	Items []map[string]any
	// Err, when set, is what every call returns: a cache that fails.
	Err error
	// Allow is the lookup policy, asked before each read (engine/catalog's
	// Kind.ResolveLookup in the operator); nil allows every read.
	Allow func(apiVersion, kind, namespace string) error
}

// Get returns the object, nil (and no error) when there is none. Namespace
// "" is a cluster-scoped object.
func (o *Objects) Get(apiVersion, kind, namespace, name string) (map[string]any, error) {
	if err := o.check(apiVersion, kind, namespace); err != nil {
		return nil, err
	}
	for _, obj := range o.Items {
		if is(obj, apiVersion, kind) && meta(obj, "name") == name && meta(obj, "namespace") == namespace {
			return obj, nil
		}
	}
	return nil, nil
}

// List returns the objects of apiVersion and kind in namespace ("" for all
// namespaces, or a cluster-scoped kind) that selector selects.
func (o *Objects) List(apiVersion, kind, namespace, selector string) ([]map[string]any, error) {
	if err := o.check(apiVersion, kind, namespace); err != nil {
		return nil, err
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, obj := range o.Items {
		if !is(obj, apiVersion, kind) || namespace != "" && meta(obj, "namespace") != namespace {
			continue
		}
		set := labels.Set{}
		md, _ := obj["metadata"].(map[string]any)
		if ls, ok := md["labels"].(map[string]any); ok {
			for k, v := range ls {
				set[k], _ = v.(string)
			}
		}
		if sel.Matches(set) {
			out = append(out, obj)
		}
	}
	return out, nil
}

func (o *Objects) check(apiVersion, kind, namespace string) error {
	if o.Err != nil {
		return o.Err
	}
	if o.Allow != nil {
		return o.Allow(apiVersion, kind, namespace)
	}
	return nil
}

func is(obj map[string]any, apiVersion, kind string) bool {
	return obj["apiVersion"] == apiVersion && obj["kind"] == kind
}

func meta(obj map[string]any, field string) string {
	md, _ := obj["metadata"].(map[string]any)
	s, _ := md[field].(string)
	return s
}
