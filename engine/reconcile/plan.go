package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
)

// Child is one rendered, adopted child.
type Child struct {
	// Template is the file it came from.
	Template string
	Object   *unstructured.Unstructured
	// NeedsFinalizer is true for a child of a namespaced parent outside
	// its namespace: it has no owner reference, so the parent's finalizer
	// deletes it.
	NeedsFinalizer bool
}

// Plan is what one reconcile will apply.
type Plan struct {
	Children     []Child
	RequeueAfter time.Duration
	// EmptyLists and Nondeterministic are the render's (render.Result).
	EmptyLists       []string
	Nondeterministic map[string][]string
}

// NeedsFinalizer reports whether any child needs the parent's finalizer.
func (p *Plan) NeedsFinalizer() bool {
	for _, c := range p.Children {
		if c.NeedsFinalizer {
			return true
		}
	}
	return false
}

// PlanError is a plan that cannot be applied: a template failed, or rendered
// a child the kind may not have.
type PlanError struct{ Err error }

func (e *PlanError) Error() string { return e.Err.Error() }
func (e *PlanError) Unwrap() error { return e.Err }

// MakePlan renders kind's children for obj and adopts them. scope tells
// whether a child kind is namespaced; its errors (a child kind the cluster
// does not know yet) are returned as they are, render failures as the
// render's *render.Error, and children the kind may not have as *PlanError.
func MakePlan(ctx context.Context, kind *catalog.Kind, obj *unstructured.Unstructured, in render.Input, scope ownership.Scope, manager string) (*Plan, error) {
	in.Object = obj.Object
	res, err := kind.Templates.Children(ctx, in)
	if err != nil {
		return nil, err
	}
	pol := ownership.Policy{Manager: manager, AllowOutside: kind.Spec.AllowClusterScoped}
	plan := &Plan{RequeueAfter: res.RequeueAfter, EmptyLists: res.EmptyLists, Nondeterministic: res.Nondeterministic}
	seen := map[string]string{}
	for _, m := range res.Manifests {
		child := m.Object
		namespaced, err := scope(child.GroupVersionKind())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Template, err)
		}
		needsFinalizer, err := ownership.Adopt(obj, child, namespaced, m.Template, pol)
		if err != nil {
			return nil, &PlanError{Err: &render.Error{Template: m.Template, Message: err.Error()}}
		}
		id := fmt.Sprintf("%s %s/%s", child.GroupVersionKind().GroupKind(), child.GetNamespace(), child.GetName())
		if other, dup := seen[id]; dup {
			return nil, &PlanError{Err: &render.Error{Template: m.Template,
				Message: fmt.Sprintf("%s is also rendered by %s", id, other)}}
		}
		seen[id] = m.Template
		plan.Children = append(plan.Children, Child{Template: m.Template, Object: child, NeedsFinalizer: needsFinalizer})
	}
	return plan, nil
}

// IsPlanError reports whether err is a failed plan.
func IsPlanError(err error) bool {
	var pe *PlanError
	return errors.As(err, &pe)
}
