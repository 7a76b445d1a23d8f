package plan

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/shard"
	"github.com/tmplop/operator/engine/status"
)

// helmHook is the annotation that makes a chart's manifest a hook.
const helmHook = "helm.sh/hook"

// compare plans each child of r against the live children, then the
// prune and the status.
func (p *planner) compare(ctx context.Context, r *rendered) {
	if r.plan == nil {
		return
	}
	if r.plan.NeedsFinalizer() && !slices.Contains(r.obj.GetFinalizers(), reconcile.Finalizer) {
		r.out.Finalizer = reconcile.Finalizer
	}
	uid := string(r.obj.GetUID())
	keep := map[apply.Key]bool{}
	// In the reconcile's order, each child after those it depends on: one
	// that would wait for them is planned still (the change it waits to
	// make), marked waiting, and left as it is for what comes after it.
	gate := reconcile.NewGate(p.kind, r.plan)
	children := make([]Child, len(r.plan.Children))
	for _, i := range gate.Order() {
		c := p.child(ctx, r, r.plan.Children[i], p.live[uid])
		if c.key != (apply.Key{}) {
			keep[c.key] = true
		}
		after := c.after
		if why, waits := gate.Hold(i, c.upToDate, c.served); waits {
			after = c.live
			if c.out.Error == "" && (c.out.Action == Create || c.out.Action == Change) {
				c.out.Waits = why
			}
		}
		gate.Done(i, after)
		children[i] = c.out
	}
	r.out.Children = append(children, p.pruned(r, p.live[uid], keep)...)
	if st, err := p.status(ctx, r, gate); err != nil {
		r.out.Error = "status: " + err.Error()
	} else {
		r.out.Status = st
	}
}

// childPlan is one rendered child, planned.
type childPlan struct {
	out Child
	// key is the child's (zero when it cannot be mapped).
	key apply.Key
	// live is the child as it is, after as it would be after its apply
	// (nil when there is none, or it is unknown): what status.yaml sees,
	// and the children that depend on it wait on.
	live, after *unstructured.Unstructured
	// upToDate: the operator skips it, with no request; served: its kind
	// is served (not: its CRD is a child of the plan, not served yet).
	upToDate, served bool
}

// child plans one rendered child of r.
func (p *planner) child(ctx context.Context, r *rendered, c reconcile.Child, owned map[apply.Key]*unstructured.Unstructured) childPlan {
	desired := c.Object
	cp := childPlan{served: true}
	out := &cp.out
	*out = Child{Template: c.Template, APIVersion: desired.GetAPIVersion(), Kind: desired.GetKind(),
		Namespace: desired.GetNamespace(), Name: desired.GetName(), Hook: desired.GetAnnotations()[helmHook]}
	m, err := p.opts.Client.Mapping(desired.GroupVersionKind())
	if err != nil {
		if key, ok := r.plan.ServedByCRD(desired, err); ok {
			// Its CRD is planned too: created once the CRD is served.
			out.Action = Create
			cp.key, cp.served = key, false
			return cp
		}
		out.Error = err.Error()
		return cp
	}
	cp.key = apply.Key{GR: m.Resource.GroupResource(), Namespace: desired.GetNamespace(), Name: desired.GetName()}
	live, err := p.liveChild(ctx, m, r.obj, desired, owned[cp.key])
	if err != nil {
		out.Error = err.Error()
		return cp
	}
	cp.live, cp.after = live, live
	if live != nil && unchanged(live, desired) {
		// What the operator skips, with no request.
		out.Action = Unchanged
		cp.upToDate = true
		return cp
	}
	if live != nil && drifted(live, desired) {
		// Applied as rendered, then edited by hand: kind.yaml's drift
		// says whether the reconcile repairs it or only reports it.
		if p.kind.DriftWarns() {
			// The paths a repair would change, in the plan's own notation:
			// the rendered fields over the live object.
			repaired := runtime.DeepCopyJSON(live.Object)
			merge(repaired, desired.Object)
			out.Action = Unchanged
			out.Paths = Paths(Clean(live.Object), Clean(repaired))
			out.Note = "drifted, reported and left as it is (drift: warn)"
			return cp
		}
		out.Note = "drifted: repaired"
	}
	if live != nil {
		if why, ok := p.kind.Recreate(desired); ok {
			out.Note = "deleted and created anew (" + why + ")"
		}
	}
	result, local, err := p.dryRun(ctx, m, desired, live)
	if err != nil {
		out.Error = err.Error()
		return cp
	}
	out.Local = local
	var before map[string]any
	if live != nil {
		before = Clean(live.Object)
	}
	planned := Clean(result.Object)
	label := out.Label()
	if live == nil {
		out.Action = Create
	} else if out.Paths = Paths(before, planned); len(out.Paths) == 0 {
		out.Action = Unchanged
		out.Note = "applied again, the API server changes nothing"
		return cp
	} else {
		out.Action = Change
	}
	shownBefore, shownAfter := maskSecrets(out.Kind, out.APIVersion, before, planned)
	if out.Diff, err = Unified(label, shownBefore, shownAfter); err != nil {
		out.Error = fmt.Sprintf("diff: %v", err)
	}
	cp.after = result
	return cp
}

// liveChild is the object a child's apply would write over: the
// operator's child of this parent as listed (read again at the rendered
// version when the list's preferred one differs), or whatever else holds
// the name, which the parent may take over only as ownership.Claim allows
// (a *ownership.ConflictError otherwise). nil: none, the apply creates it.
func (p *planner) liveChild(ctx context.Context, m *meta.RESTMapping, parent, desired, listed *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if listed != nil && listed.GetAPIVersion() == desired.GetAPIVersion() {
		if listed.GetDeletionTimestamp() != nil {
			return nil, nil
		}
		return listed, nil
	}
	live, err := p.opts.Client.Get(ctx, m, desired.GetNamespace(), desired.GetName())
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", desired.GetKind(), desired.GetName(), err)
	}
	if listed == nil {
		if err := ownership.Claim(live, m.GroupVersionKind.GroupKind(), parent, p.kind.Claimant(p.opts.Manager)); err != nil {
			return nil, err
		}
	}
	if live.GetDeletionTimestamp() != nil {
		return nil, nil
	}
	return live, nil
}

// unchanged is the operator's skip (apply.Applier.Prepare): the live
// child carries the hash of this very content and still holds every
// rendered value; at another version than the rendered one, the hash
// alone.
func unchanged(live, desired *unstructured.Unstructured) bool {
	want := desired.GetAnnotations()[ownership.AnnotationHash]
	if want == "" || live.GetAnnotations()[ownership.AnnotationHash] != want {
		return false
	}
	return live.GetAPIVersion() != desired.GetAPIVersion() || apply.Contains(live.Object, desired.Object)
}

// drifted reports whether live carries the hash of desired's content but
// no longer holds it: edited by hand since it was applied (the reconcile's
// apply.Desired.Drifted).
func drifted(live, desired *unstructured.Unstructured) bool {
	want := desired.GetAnnotations()[ownership.AnnotationHash]
	return want != "" && live.GetAnnotations()[ownership.AnnotationHash] == want &&
		live.GetAPIVersion() == desired.GetAPIVersion() && !apply.Contains(live.Object, desired.Object)
}

// dryRun asks the API server what applying desired would store, as the
// operator applies it (its field manager, forced, the live object's UID as
// a precondition). When the identity may not apply (a read-only one), the
// rendered fields are merged over the live object instead, and local is
// true.
func (p *planner) dryRun(ctx context.Context, m *meta.RESTMapping, desired, live *unstructured.Unstructured) (result *unstructured.Unstructured, local bool, err error) {
	obj := desired.DeepCopy()
	if live != nil {
		obj.SetUID(live.GetUID())
		// A sharded operator's replica labels what it applies with its
		// shard; the plan keeps the live child's, as that replica would.
		if held, ok := live.GetLabels()[shard.HeldByLabel]; ok && p.opts.Shard == "" {
			labels := obj.GetLabels()
			labels[shard.HeldByLabel] = held
			obj.SetLabels(labels)
		}
	}
	if !p.opts.Local {
		res, err := p.opts.Client.ApplyDryRun(ctx, m, obj)
		if err == nil {
			return res, false, nil
		}
		if !apierrors.IsForbidden(err) || apierrors.HasStatusCause(err, "NamespaceTerminating") {
			return nil, false, fmt.Errorf("dry-run apply: %w", err)
		}
	}
	if live == nil {
		return obj, true, nil
	}
	merged := runtime.DeepCopyJSON(live.Object)
	merge(merged, obj.Object)
	return &unstructured.Unstructured{Object: merged}, true, nil
}

// merge writes src's values over dst's, as a local stand-in for the
// server's merge: maps merged key by key, lists of the same length element
// by element (a container keeps the fields the API server defaulted), any
// other value replaced. It cannot know what the server would default in
// a new element, nor which fields the manager stops owning: a local diff
// shows what changes, not what goes.
func merge(dst, src map[string]any) {
	for k, v := range src {
		dst[k] = mergeValue(dst[k], v)
	}
}

func mergeValue(dst, src any) any {
	switch s := src.(type) {
	case map[string]any:
		if d, ok := dst.(map[string]any); ok {
			merge(d, s)
			return d
		}
	case []any:
		if d, ok := dst.([]any); ok && len(d) == len(s) {
			for i := range s {
				d[i] = mergeValue(d[i], s[i])
			}
			return d
		}
	}
	return runtime.DeepCopyJSONValue(src)
}

// pruned are the parent's live children that no planned child keeps, as
// the prune step picks them: not being deleted, not prune: disabled, not
// kept by the kind's format. The deletion guard decides as the reconcile's
// does (reconcile.Guard): a prune it holds back is listed, marked Held,
// and r's object carries the hold.
func (p *planner) pruned(r *rendered, owned map[apply.Key]*unstructured.Unstructured, keep map[apply.Key]bool) []Child {
	if !p.kind.Pruning() {
		return nil
	}
	existing := make(map[apply.Key]apply.Child, len(owned))
	candidates := map[apply.Key]apply.Child{}
	for k, o := range owned {
		existing[k] = o
		if !keep[k] && o.GetDeletionTimestamp() == nil && !ownership.PruneDisabled(o) && !p.kind.Kept(o) {
			candidates[k] = o
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	delay := p.opts.PruneConfirmDelay
	if delay <= 0 {
		delay = reconcile.DefaultPruneConfirmDelay
	}
	hold := reconcile.Guard(p.kind, r.obj, r.plan.EmptyLists, existing, candidates, len(keep)+len(candidates), p.now, delay)
	if hold != nil {
		r.out.PruneHeld = &Hold{Reason: hold.Reason, Message: hold.Message(), Since: hold.Since, Until: hold.Until, Begins: hold.Begins}
	}
	var out []Child
	for _, k := range slices.SortedFunc(maps.Keys(candidates), func(a, b apply.Key) int { return strings.Compare(a.String(), b.String()) }) {
		o := owned[k]
		ch := Child{Template: o.GetAnnotations()[ownership.AnnotationTemplate], APIVersion: o.GetAPIVersion(), Kind: o.GetKind(),
			Namespace: o.GetNamespace(), Name: o.GetName(), Action: Prune, Held: hold != nil}
		if hold != nil {
			ch.Note = "held back by the deletion guard until " + hold.Until.UTC().Format(time.RFC3339)
		}
		var err error
		shown, _ := maskSecrets(ch.Kind, ch.APIVersion, Clean(o.Object), nil)
		if ch.Diff, err = Unified(ch.Label(), shown, nil); err != nil {
			ch.Error = fmt.Sprintf("diff: %v", err)
		}
		out = append(out, ch)
	}
	return out
}

// status is the change of the parent's status a reconcile would write,
// given its children as the plan leaves them (the gate's, with the waits
// and a prune held back: the reconcile's own status step); nil when it
// would write none. A built-in kind's status is Kubernetes', never
// written.
func (p *planner) status(ctx context.Context, r *rendered, gate *reconcile.Gate) (*Status, error) {
	if p.kind.BuiltIn() {
		return nil, nil
	}
	budget := p.kind.RenderBudget(p.opts.Budget)
	rendered, conds, err := gate.Preview(ctx, r.obj, r.out.PruneHeld != nil, r.lookup, p.now, budget)
	if err != nil {
		return nil, err
	}
	desired, err := status.DesiredAt(r.obj, rendered, conds, p.now, p.opts.Revision)
	if err != nil {
		return nil, err
	}
	if status.Unchanged(r.obj, desired) {
		return nil, nil
	}
	current, _, _ := unstructured.NestedMap(r.obj.Object, "status")
	if current, err = status.Normalize(current); err != nil {
		return nil, err
	}
	before, after := map[string]any{"status": current}, map[string]any{"status": desired}
	st := &Status{Paths: Paths(before, after)}
	if st.Diff, err = Unified(r.obj.GetKind()+" "+r.obj.GetNamespace()+"/"+r.obj.GetName()+" status", before, after); err != nil {
		return nil, err
	}
	return st, nil
}
