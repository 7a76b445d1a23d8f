package catalog

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/render"
)

// ErrNotDeclared marks a lookup of a kind kind.yaml does not declare, among
// the refusals (render.ErrLookupRefused): lint reads it to tell the author
// what to add.
var ErrNotDeclared = errors.New("not declared in kind.yaml lookups")

// ResolveLookup is the folder's lookup policy, the one function that says
// what its templates may read (the controller's lookups and lint both ask
// it): only the kinds kind.yaml declares, and a namespaced kind only in
// the parent's namespace, unless the declaration says allNamespaces. A
// cluster-scoped parent has no namespace of its own, so it reads
// namespaced kinds only with that opt-in.
//
// It returns the declaration and the namespace to read: "" for a
// cluster-scoped kind (namespaced false), the namespace asked for
// otherwise. A refusal wraps render.ErrLookupRefused, so that the render
// fails the same way until the object or the folder changes.
func (k *Kind) ResolveLookup(gk schema.GroupKind, namespaced bool, namespace, parentNS string) (LookupSpec, string, error) {
	spec, ok := k.lookupSpec(gk)
	if !ok {
		return LookupSpec{}, "", fmt.Errorf("%w: %s is %w", render.ErrLookupRefused, gk, ErrNotDeclared)
	}
	if !namespaced {
		return spec, "", nil
	}
	if spec.AllNamespaces {
		return spec, namespace, nil
	}
	where := fmt.Sprintf("namespace %q", namespace)
	if namespace == "" {
		where = "all namespaces"
	}
	if parentNS == "" {
		return LookupSpec{}, "", fmt.Errorf("%w: %s in %s from a cluster-scoped parent, which has no namespace of its own (kind.yaml lookups: allNamespaces: true allows it)",
			render.ErrLookupRefused, gk, where)
	}
	if namespace != parentNS {
		return LookupSpec{}, "", fmt.Errorf("%w: %s in %s is outside the parent's namespace %q (kind.yaml lookups: allNamespaces: true allows it)",
			render.ErrLookupRefused, gk, where, parentNS)
	}
	return spec, namespace, nil
}

// lookupSpec is kind.yaml's declaration of gk (any version of it).
func (k *Kind) lookupSpec(gk schema.GroupKind) (LookupSpec, bool) {
	for _, l := range k.Spec.Lookups {
		if schema.FromAPIVersionAndKind(l.APIVersion, l.Kind).GroupKind() == gk {
			return l, true
		}
	}
	return LookupSpec{}, false
}
