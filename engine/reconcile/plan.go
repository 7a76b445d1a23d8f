package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/requeue"
	"github.com/tmplop/operator/engine/status"
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
	Children []Child
	// DependsOn is the order the children apply in: the children of a
	// template wait for those of the templates it names
	// (catalog.Rendered).
	DependsOn map[string][]string
	// OnDelete are the children of the kind's delete steps, by step name
	// (catalog.DeleteStep): applied only when the object is deleted, at
	// their step; the parent holds the finalizer while there are any.
	OnDelete     map[string][]Child
	RequeueAfter time.Duration
	// EmptyLists and Nondeterministic are the render's (render.Result).
	EmptyLists       []string
	Nondeterministic map[string][]string

	// crds are the kinds the plan's CustomResourceDefinitions define: a
	// child of such a kind can be planned before the cluster serves it.
	crds map[schema.GroupKind]crdKind
}

// crdKind is a kind a planned CRD defines.
type crdKind struct {
	gk         schema.GroupKind
	plural     string
	namespaced bool
}

// definedKind reads the kind a CustomResourceDefinition manifest defines.
func definedKind(o *unstructured.Unstructured) (crdKind, bool) {
	if o.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}) {
		return crdKind{}, false
	}
	group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
	plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
	scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
	if group == "" || kind == "" || plural == "" {
		return crdKind{}, false
	}
	return crdKind{gk: schema.GroupKind{Group: group, Kind: kind}, plural: plural, namespaced: scope != "Cluster"}, true
}

// scope answers for the kinds the plan's CRDs define while the cluster
// does not serve them yet.
func (p *Plan) scope(base ownership.Scope) ownership.Scope {
	if len(p.crds) == 0 {
		return base
	}
	return func(gvk schema.GroupVersionKind) (bool, error) {
		namespaced, err := base(gvk)
		if crd, ok := p.crds[gvk.GroupKind()]; ok && meta.IsNoMatchError(err) {
			return crd.namespaced, nil
		}
		return namespaced, err
	}
}

// ServedByCRD returns the key of child when mapping it failed because the
// CRD that defines its kind is a child of the plan, not served yet: the
// child waits for it.
func (p *Plan) ServedByCRD(child *unstructured.Unstructured, err error) (apply.Key, bool) {
	crd, ok := p.crds[child.GroupVersionKind().GroupKind()]
	if !ok || !meta.IsNoMatchError(err) {
		return apply.Key{}, false
	}
	gr := schema.GroupResource{Group: crd.gk.Group, Resource: crd.plural}
	return apply.Key{GR: gr, Namespace: child.GetNamespace(), Name: child.GetName()}, true
}

// objects are the objects of the children, in plan order.
func (p *Plan) objects() []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(p.Children))
	for i, c := range p.Children {
		out[i] = c.Object
	}
	return out
}

// NeedsFinalizer reports whether any child needs the parent's finalizer.
func (p *Plan) NeedsFinalizer() bool {
	for _, hooks := range p.OnDelete {
		if len(hooks) > 0 {
			return true
		}
	}
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

// RequeueMark: the same render plans the same children until the object
// or the folder changes.
func (e *PlanError) RequeueMark() requeue.Mark {
	return requeue.Mark{Cause: requeue.CauseRender, Terminal: true}
}

// MakePlan renders kind's children for obj and adopts them under pol (its
// Manager and Bounds; AllowOutside is the kind's). scope tells whether a
// child kind is namespaced; its errors (a child kind the cluster does not
// know yet) are returned as they are, render failures as the render's
// *render.Error, and children the kind may not have as *PlanError.
func MakePlan(ctx context.Context, kind *catalog.Kind, obj *unstructured.Unstructured, in render.Input, cl catalog.Cluster, scope ownership.Scope, pol ownership.Policy) (*Plan, error) {
	in.Object = obj.Object
	res, err := kind.Children(ctx, in, cl)
	if err != nil {
		return nil, err
	}
	plan := &Plan{DependsOn: res.DependsOn, RequeueAfter: res.RequeueAfter, EmptyLists: res.EmptyLists, Nondeterministic: res.Nondeterministic}
	children, problems, err := plan.adopt(kind, obj, res.Manifests, scope, pol)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		p := problems[0]
		var msg string
		if p.Duplicate != nil {
			c := p.Manifest.Object
			msg = fmt.Sprintf("%s %s/%s is also rendered by %s", c.GroupVersionKind().GroupKind(), c.GetNamespace(), c.GetName(), p.Duplicate.Template)
		} else {
			msg = p.Err.Error()
		}
		return nil, &PlanError{Err: &render.Error{Template: p.Manifest.Template, Message: msg}}
	}
	// What the object's status records as done stays out of the plan
	// until its content changes; the prune deletes it.
	plan.Children = slices.DeleteFunc(children, func(c Child) bool { return kind.Done(obj.Object, c.Object) })
	for _, step := range kind.DeleteSteps() {
		hooks, err := plan.adoptHooks(kind, obj, res.OnDelete[step.Name], scope, pol, step.Name)
		if err != nil {
			return nil, err
		}
		if len(hooks) > 0 {
			if plan.OnDelete == nil {
				plan.OnDelete = map[string][]Child{}
			}
			plan.OnDelete[step.Name] = hooks
		}
	}
	return plan, nil
}

// adoptHooks makes the children of the delete step named step children,
// as adopt does; one that cannot be a child fails the plan.
func (plan *Plan) adoptHooks(kind *catalog.Kind, obj *unstructured.Unstructured, ms []render.Manifest, scope ownership.Scope, pol ownership.Policy, step string) ([]Child, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	hooks, problems, err := plan.adopt(kind, obj, ms, scope, pol)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		p := problems[0]
		msg := "a " + step + " hook is also a child"
		if p.Err != nil {
			msg = p.Err.Error()
		}
		return nil, &PlanError{Err: &render.Error{Template: p.Manifest.Template, Message: msg}}
	}
	return hooks, nil
}

// AdoptProblem is a rendered manifest that cannot be a child: Err says why
// (a child the kind may not have: ownership.OutsideError,
// ownership.ControllerError), or Duplicate is the manifest rendered first
// under the same kind, namespace and name.
type AdoptProblem struct {
	Manifest  render.Manifest
	Err       error
	Duplicate *render.Manifest
}

// Adopt turns rendered manifests into the children of obj
// (ownership.Adopt on each, under pol with the kind's allowClusterScoped)
// and finds the ones rendered twice: the step from render to apply, which
// MakePlan and lint share. The manifests' objects become the children (pass
// copies to keep them). A kind that a manifest's CustomResourceDefinition
// defines is scoped by that CRD while the cluster does not serve it yet.
// problems are every manifest that cannot be a child; err is a failure of
// scope (a kind the cluster does not know).
func Adopt(kind *catalog.Kind, obj *unstructured.Unstructured, ms []render.Manifest, scope ownership.Scope, pol ownership.Policy) (children []Child, problems []AdoptProblem, err error) {
	return (&Plan{}).adopt(kind, obj, ms, scope, pol)
}

func (plan *Plan) adopt(kind *catalog.Kind, obj *unstructured.Unstructured, ms []render.Manifest, scope ownership.Scope, pol ownership.Policy) ([]Child, []AdoptProblem, error) {
	pol.AllowOutside = kind.Spec.AllowClusterScoped
	pol.Kept = kind.Kept
	pol.OwnerAPIVersion = kind.OwnerAPIVersion()
	for _, m := range ms {
		if crd, ok := definedKind(m.Object); ok {
			if plan.crds == nil {
				plan.crds = map[schema.GroupKind]crdKind{}
			}
			plan.crds[crd.gk] = crd
		}
	}
	scope = plan.scope(scope)
	var children []Child
	var problems []AdoptProblem
	seen := map[string]int{} // child identity -> index in ms
	for i, m := range ms {
		child := m.Object
		namespaced, err := scope(child.GroupVersionKind())
		if err != nil && len(problems) > 0 {
			return children, problems, nil // the first problem comes first
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", m.Template, err)
		}
		// What driftIgnore leaves to others is never applied, and out of
		// the hash (a kind with no rule for the child changes nothing).
		kind.StripIgnored(child)
		needsFinalizer, err := ownership.Adopt(obj, child, namespaced, m.Template, pol)
		if err != nil {
			problems = append(problems, AdoptProblem{Manifest: m, Err: err})
			continue
		}
		id := fmt.Sprintf("%s %s/%s", child.GroupVersionKind().GroupKind(), child.GetNamespace(), child.GetName())
		if first, dup := seen[id]; dup {
			problems = append(problems, AdoptProblem{Manifest: m, Duplicate: &ms[first]})
			continue
		}
		seen[id] = i
		children = append(children, Child{Template: m.Template, Object: child, NeedsFinalizer: needsFinalizer})
	}
	return children, problems, nil
}

// IsPlanError reports whether err is a failed plan.
func IsPlanError(err error) bool {
	var pe *PlanError
	return errors.As(err, &pe)
}

// plan reads what the object's render may read, renders its children and
// adopts them.
func (r *Reconciler) plan(ctx context.Context, obj *unstructured.Unstructured) (*trip, error) {
	t := &trip{obj: obj, now: r.now()}
	lookup, err := r.Lookups.For(ctx, obj)
	if err != nil {
		return nil, failed(status.ReasonLookupFailed, err)
	}
	t.lookup = lookup
	t.in = render.Input{Lookup: lookup, Now: t.now, Budget: r.Kind.RenderBudget(r.Budget)}
	rendering := time.Now()
	t.plan, err = MakePlan(ctx, r.Kind, obj, t.in, r.Cluster, r.Client.Namespaced, r.policy())
	observeRender(r.Kind.GVK.GroupKind(), RenderChildren, rendering)
	return t, err
}
