package reconcile

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/render"
)

// Gate is the apply step's order and its dependsOn waits over one plan's
// children, child by child: the reconcile applies a child the gate does
// not hold back, and operator plan lists such a child as waiting. Both
// then tell the gate what the child is after the step (Done), which the
// children after it wait on, and the status step reads.
type Gate struct {
	kind *catalog.Kind
	plan *Plan
	// states and lives are per planned child, in plan order: its state
	// (waiting, live, health) and the object the step leaves (nil when
	// there is none).
	states []childState
	lives  []*unstructured.Unstructured
	// gates are the templates judged so far: what each waits for (nil:
	// nothing). A template's children all wait, or none does.
	gates map[string]*wait
	waits []wait
	// unserved is set when a child waits for its kind to be served.
	unserved bool
}

// NewGate is the gate of plan's children, of kind.
func NewGate(kind *catalog.Kind, plan *Plan) *Gate {
	g := &Gate{kind: kind, plan: plan, states: make([]childState, len(plan.Children)),
		lives: make([]*unstructured.Unstructured, len(plan.Children)), gates: map[string]*wait{}}
	for i, c := range plan.Children {
		g.states[i] = childState{template: c.Template, label: label(c.Object), first: isFirst(c.Object)}
	}
	return g
}

// Order is the order the children are applied in (applyOrder).
func (g *Gate) Order() []int { return applyOrder(g.plan.Children, g.plan.DependsOn) }

// Hold reports whether child i waits, and for what: for the children its
// template depends on, or for its kind, whose CRD is Current but not
// served yet (served false). A CRD or a Namespace, and a child that is
// up to date, wait for nothing. Children are asked about in Order, each
// after Done of those before it.
func (g *Gate) Hold(i int, upToDate, served bool) (string, bool) {
	st := &g.states[i]
	if st.first || upToDate {
		return "", false
	}
	w, seen := g.gates[st.template]
	if !seen {
		w = blocker(st.template, g.plan.DependsOn[st.template], g.states)
		g.gates[st.template] = w
		if w != nil {
			g.waits = append(g.waits, *w)
		}
	}
	if w == nil && !served {
		w = &wait{template: st.template, dep: st.template, on: st.label + ": its CustomResourceDefinition is not served yet"}
		g.waits = append(g.waits, *w)
		g.unserved = true
	}
	if w == nil {
		return "", false
	}
	st.waiting = true
	return w.String(), true
}

// Defer holds child i back for a reason of the step's own (why: the child
// and what it waits for): deleted, to be created anew.
func (g *Gate) Defer(i int, why string) {
	st := &g.states[i]
	st.waiting = true
	g.waits = append(g.waits, wait{template: st.template, dep: st.template, on: st.label + ": " + why})
}

// Done records child i as the step leaves it: live is the object (nil
// when there is none), whose health the children after it wait on.
func (g *Gate) Done(i int, live *unstructured.Unstructured) {
	g.lives[i] = live
	if live != nil {
		g.states[i].live, g.states[i].health = true, g.kind.Health.Check(live)
	}
}

// Waiting reports whether any child waits.
func (g *Gate) Waiting() bool { return len(g.waits) > 0 }

// Preview is Preview over the children as the gate leaves them, the
// waits included, and a prune held back or not: what the status step
// would write.
func (g *Gate) Preview(ctx context.Context, obj *unstructured.Unstructured, pruneHeld bool, lookup render.Lookup, now time.Time, budget render.Budget) (map[string]any, []metav1.Condition, error) {
	st, err := g.status(obj, pruneHeld, lookup, now, budget).render(ctx)
	if err != nil {
		return nil, nil, err
	}
	return st.rendered, append([]metav1.Condition{reconciledCondition(obj)}, st.readyConds...), nil
}

// status is the status step over the children as the gate leaves them.
func (g *Gate) status(obj *unstructured.Unstructured, pruneHeld bool, lookup render.Lookup, now time.Time, budget render.Budget) statusStep {
	return statusStep{kind: g.kind, obj: obj, states: g.states, lives: g.lives, waits: g.waits, pruneHeld: pruneHeld,
		lookup: lookup, now: now, budget: budget}
}
