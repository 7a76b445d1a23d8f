package render

import (
	"errors"
	"fmt"

	"github.com/tmplop/operator/engine/requeue"
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

// RequeueMark says what retrying a failed lookup can do: a refusal fails
// the same way until the object or the folder changes; any other failure
// (a cache not synced, a kind not served yet) may pass.
func (e *LookupError) RequeueMark() requeue.Mark {
	if errors.Is(e.Err, ErrLookupRefused) {
		return requeue.Mark{Cause: requeue.CauseRender, Terminal: true}
	}
	if m, ok := requeue.Of(e.Err); ok {
		return m
	}
	return requeue.Mark{Cause: requeue.CauseLookup}
}

// Lookup reads other cluster objects for the `lookup` functions. Implementations come from the
// caller (informer caches); render only calls them.
type Lookup interface {
	// Get returns the object, or (nil, nil) when it does not exist.
	Get(apiVersion, kind, namespace, name string) (map[string]any, error)
	// List returns the objects matching the label selector ("" = all) in namespace ("" = all namespaces / cluster-scoped).
	List(apiVersion, kind, namespace, selector string) ([]map[string]any, error)
}

// objectPath names a looked-up object in errors. The lookup functions
// themselves read the render's Lookup and record its empty lists: they are
// renderState's (state.go).
func objectPath(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// listScope names the scope of a list lookup in errors.
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
