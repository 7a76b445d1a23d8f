package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
)

// prepare maps every planned child, records its kind in the inventory
// before anything of that kind is applied, and checks each against what
// exists. A child that exists and is not the parent's stops the whole plan
// (nothing is applied): the parent is told, and reconciled again when that
// object changes.
func (r *Reconciler) prepare(ctx context.Context, obj *unstructured.Unstructured, plan *Plan) ([]*apply.Desired, error) {
	gks := map[schema.GroupKind]bool{}
	for _, c := range plan.Children {
		gks[c.Object.GroupVersionKind().GroupKind()] = true
	}
	if len(gks) > 0 {
		sorted := slices.SortedFunc(maps.Keys(gks), func(a, b schema.GroupKind) int { return strings.Compare(a.String(), b.String()) })
		if err := r.Inventory.Record(ctx, r.Kind.GVK.GroupKind(), sorted); err != nil {
			return nil, err
		}
	}
	out := make([]*apply.Desired, 0, len(plan.Children))
	for _, c := range plan.Children {
		m, err := r.Client.Mapping(c.Object.GroupVersionKind())
		if err != nil {
			if key, ok := plan.ServedByCRD(c.Object, err); ok {
				// Its CRD is a child too, applied first: the child waits
				// for it (no mapping: it is not applied).
				out = append(out, &apply.Desired{Key: key, Object: c.Object})
				continue
			}
			return nil, fmt.Errorf("%s: %w", c.Template, err)
		}
		d, err := r.Applier.Prepare(ctx, r.Client, m, obj, c.Object, r.Kind.Claimant(r.Manager))
		if err != nil {
			if apply.IsConflict(err) && r.WaitFor != nil {
				r.WaitFor(apply.Key{GR: m.Resource.GroupResource(), Namespace: c.Object.GetNamespace(), Name: c.Object.GetName()}, ownership.ParentOf(obj))
			}
			return nil, fmt.Errorf("%s: %w", c.Template, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// crdServeRetry is when a reconcile looks again for a child whose CRD, a
// child itself, is established but not in discovery yet: the CRD's own
// events have passed, and discovery is refreshed at most every 10s.
const crdServeRetry = 5 * time.Second

// unstable finds the children that would be re-applied although nothing
// the render reads has changed, and that render differently when rendered
// again with the very same input: a template that prints randAlphaNum,
// uuidv4 or a new certificate. Re-applying them on every reconcile would
// write forever; they are created once and then left as they are, until
// the object's spec changes. It returns their indexes and a message.
func (r *Reconciler) unstable(ctx context.Context, obj *unstructured.Unstructured, plan *Plan, desired []*apply.Desired, in render.Input) (map[int]bool, string) {
	var changed []int
	for i, d := range desired {
		if d.Exists() && !d.UpToDate {
			changed = append(changed, i)
		}
	}
	if len(changed) == 0 || !stable(r.Kind, obj) {
		return nil, ""
	}
	again, err := MakePlan(ctx, r.Kind, obj, in, r.Cluster, r.Client.Namespaced, r.policy())
	if err != nil {
		return nil, "" // the first render succeeded; let it stand
	}
	hashes := map[string]string{}
	for _, c := range again.Children {
		hashes[childID(c.Object)] = c.Object.GetAnnotations()[ownership.AnnotationHash]
	}
	skip := map[int]bool{}
	var parts []string
	for _, i := range changed {
		d := desired[i]
		if h, ok := hashes[childID(d.Object)]; ok && h == d.Hash() {
			continue
		}
		skip[i] = true
		part := fmt.Sprintf("%s: %s", plan.Children[i].Template, d.Key)
		if fns := plan.Nondeterministic[plan.Children[i].Template]; len(fns) > 0 {
			part += " (it calls " + strings.Join(fns, ", ") + ")"
		}
		parts = append(parts, part)
	}
	if len(skip) == 0 {
		return nil, ""
	}
	r.Stats.add(&r.Stats.NonDeterministic)
	return skip, "rendered differently twice from the same input, so it is not re-applied until the spec changes: " + strings.Join(parts, "; ")
}

// childID identifies a rendered child across two renders.
func childID(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().GroupKind().String() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// claim checks every planned child against what holds its name, leaves
// alone the children that render differently each time, and writes the
// finalizer the plan needs before anything is applied outside the
// namespace.
func (r *Reconciler) claim(ctx context.Context, t *trip) error {
	desired, err := r.prepare(ctx, t.obj, t.plan)
	if err != nil {
		return err
	}
	t.desired = desired
	t.drifts = r.findDrift(t) // before unstable: a drift left alone is no change
	t.skip, t.unstableMsg = r.unstable(ctx, t.obj, t.plan, desired, t.in)
	t.meta = currentMeta(t.obj)
	t.meta.finalizer = t.meta.finalizer || t.plan.NeedsFinalizer()
	if err := r.writeParentMeta(ctx, t.obj, t.meta); err != nil {
		return &parentMetaError{err}
	}
	return nil
}

// parentMetaError is a failed write of the parent's metadata: its UID
// precondition fails when the object went away (parentChanged).
type parentMetaError struct{ err error }

func (e *parentMetaError) Error() string { return e.err.Error() }
func (e *parentMetaError) Unwrap() error { return e.err }
