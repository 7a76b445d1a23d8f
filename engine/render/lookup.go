package render

import (
	"errors"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
)

// ErrLookupRefused marks a lookup that the kind may not make: a kind its
// kind.yaml does not declare, a namespace it may not read. Lookup
// implementations wrap it; such a render fails the same way until the
// object or the folder changes.
var ErrLookupRefused = errors.New("lookup refused")

// LookupError is a lookup that failed. A render error caused by one wraps
// it, so that callers can tell a refusal (errors.Is ErrLookupRefused) or a
// cluster read that may pass (a cache not synced, a kind not served yet)
// from a mistake in a template.
type LookupError struct{ Err error }

func (e *LookupError) Error() string { return e.Err.Error() }
func (e *LookupError) Unwrap() error { return e.Err }

// Lookup reads other cluster objects for the `lookup` functions. Implementations come from the
// caller (informer caches); render only calls them.
type Lookup interface {
	// Get returns the object, or (nil, nil) when it does not exist.
	Get(apiVersion, kind, namespace, name string) (map[string]any, error)
	// List returns the objects matching the label selector ("" = all) in namespace ("" = all namespaces / cluster-scoped).
	List(apiVersion, kind, namespace, selector string) ([]map[string]any, error)
}

// lookupFunc is Helm's lookup: with a name, the object or an empty map when
// it does not exist (so `{{ if lookup ... }}` tests existence); without a
// name, a List object of all of them.
func (st *renderState) lookupFunc(apiVersion, kind, namespace, name string) (map[string]any, error) {
	if err := st.meter.check(); err != nil {
		return nil, err
	}
	if name == "" {
		return st.list("lookup", apiVersion, kind, namespace, "")
	}
	if st.lookup == nil {
		return map[string]any{}, nil
	}
	obj, err := st.lookup.Get(apiVersion, kind, namespace, name)
	if err != nil {
		return nil, &funcError{msg: fmt.Sprintf("lookup %s %s %s: %v", apiVersion, kind, objectPath(namespace, name), err), cause: &LookupError{Err: err}}
	}
	if obj == nil {
		return map[string]any{}, nil
	}
	if err := st.chargeCopy("lookup", obj); err != nil {
		return nil, err
	}
	// Objects come from the caller's informer cache, which templates must
	// not be able to mutate with set or merge.
	obj, err = copyJSONMap(obj)
	if err != nil {
		return nil, funcErrorf("lookup %s %s %s: %v", apiVersion, kind, objectPath(namespace, name), err)
	}
	return obj, nil
}

// lookupSelectFunc is lookup of a list filtered by a label selector, which
// Helm's lookup cannot express.
func (st *renderState) lookupSelectFunc(apiVersion, kind, namespace, selector string) (map[string]any, error) {
	if err := st.meter.check(); err != nil {
		return nil, err
	}
	return st.list("lookupSelect", apiVersion, kind, namespace, selector)
}

// list returns a List object, the shape Helm's lookup returns for lists, so
// templates written for Helm range over .items unchanged.
func (st *renderState) list(fn, apiVersion, kind, namespace, selector string) (map[string]any, error) {
	// The List object around the items.
	if err := st.meter.charge(3*entryCost, func() string { return fn }); err != nil {
		return nil, err
	}
	items := []any{}
	if st.lookup != nil {
		objs, err := st.lookup.List(apiVersion, kind, namespace, selector)
		if err != nil {
			return nil, &funcError{msg: fmt.Sprintf("%s %s %s%s: %v", fn, apiVersion, kind, listScope(namespace, selector), err), cause: &LookupError{Err: err}}
		}
		if err := st.meter.charge(elemCost*int64(len(objs)), func() string { return fn + " of " + strconv.Itoa(len(objs)) + " objects" }); err != nil {
			return nil, err
		}
		items = make([]any, 0, len(objs))
		for _, obj := range objs {
			if err := st.chargeCopy(fn, obj); err != nil {
				return nil, err
			}
			c, err := copyJSONMap(obj)
			if err != nil {
				return nil, funcErrorf("%s %s %s%s: %v", fn, apiVersion, kind, listScope(namespace, selector), err)
			}
			items = append(items, c)
		}
		if len(items) == 0 {
			if st.emptyLists == nil {
				st.emptyLists = map[string]bool{}
			}
			st.emptyLists[st.currentFile()] = true
		}
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, nil
}

// chargeCopy charges the copy of a cached object before it is made: a
// template that looks up a large object in a loop copies it every time.
func (st *renderState) chargeCopy(fn string, obj map[string]any) error {
	if err := st.meter.check(); err != nil {
		return err
	}
	size, _ := expandedSize(obj, st.meter.remaining())
	return st.meter.charge(size, func() string { return fmt.Sprintf("%s: a copy of %d bytes or more", fn, size) })
}

func objectPath(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func listScope(namespace, selector string) string {
	s := ""
	if namespace != "" {
		s += " in " + namespace
	}
	if selector != "" {
		s += fmt.Sprintf(" matching %q", selector)
	}
	return s
}

// copyJSONMap deep-copies unstructured content with runtime.DeepCopyJSON,
// turning its panic on non-JSON values (an int where int64 is expected, a
// typed struct) into an error: a render must not crash the operator.
func copyJSONMap(m map[string]any) (out map[string]any, err error) {
	if m == nil {
		return map[string]any{}, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("not JSON-compatible unstructured content: %v", r)
		}
	}()
	return runtime.DeepCopyJSON(m), nil
}
