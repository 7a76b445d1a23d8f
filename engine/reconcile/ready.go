package reconcile

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/health"
	"github.com/tmplop/operator/engine/status"
)

// childState is one planned child as readiness and ordering see it.
type childState struct {
	template string
	label    string // Kind/name, for messages
	// first: a CustomResourceDefinition or a Namespace, applied before
	// every other child, which all wait for it to be Current.
	first bool
	// waiting: not applied in this reconcile, because its template waits
	// for children it depends on. It is kept (not pruned).
	waiting bool
	live    bool // it exists: health is its health
	health  health.Result
}

// wait is one template whose children wait, and the first child they wait
// for.
type wait struct {
	template string
	dep      string // the template of the child waited for
	on       string // that child and why it is not Current
}

func (w wait) String() string {
	if w.dep == w.template { // for a CRD of its own
		return fmt.Sprintf("%s waits: %s", w.template, w.on)
	}
	return fmt.Sprintf("%s waits for %s (%s)", w.template, w.dep, w.on)
}

// firstKinds are applied before every other child, and waited for: the
// kinds other children need to exist at all.
var firstKinds = map[schema.GroupKind]bool{
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: true,
	{Kind: "Namespace"}: true,
}

func isFirst(o *unstructured.Unstructured) bool {
	return firstKinds[o.GroupVersionKind().GroupKind()]
}

func label(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }

// applyOrder is the order the plan's children are applied in:
// CustomResourceDefinitions and Namespaces first, then the templates in
// dependsOn order (each after the templates it waits for; otherwise by
// file name), each template's children in the order it rendered them.
// Without dependsOn, CRDs or Namespaces, it is the plan's order.
func applyOrder(children []Child, deps map[string][]string) []int {
	templates := map[string]bool{}
	for _, c := range children {
		templates[c.Template] = true
	}
	for t, ds := range deps {
		templates[t] = true
		for _, d := range ds {
			templates[d] = true
		}
	}
	// Kahn's algorithm, the next template always the first by name of
	// those whose dependencies are placed.
	pending := map[string]int{}
	dependents := map[string][]string{}
	for t := range templates {
		pending[t] = len(deps[t])
		for _, d := range deps[t] {
			dependents[d] = append(dependents[d], t)
		}
	}
	pos := map[string]int{}
	ready := slices.Sorted(func(yield func(string) bool) {
		for t := range templates {
			if pending[t] == 0 && !yield(t) {
				return
			}
		}
	})
	for len(ready) > 0 {
		t := ready[0]
		ready = ready[1:]
		pos[t] = len(pos)
		for _, u := range dependents[t] {
			if pending[u]--; pending[u] == 0 {
				i, _ := slices.BinarySearch(ready, u)
				ready = slices.Insert(ready, i, u)
			}
		}
	}
	// A cycle is refused at load; should one get here, its templates
	// go last, by name.
	for _, t := range slices.Sorted(maps.Keys(templates)) {
		if _, ok := pos[t]; !ok {
			pos[t] = len(pos)
		}
	}
	order := make([]int, 0, len(children))
	var rest []int
	for i, c := range children {
		if isFirst(c.Object) {
			order = append(order, i)
		} else {
			rest = append(rest, i)
		}
	}
	slices.SortStableFunc(rest, func(a, b int) int { return cmp.Compare(pos[children[a].Template], pos[children[b].Template]) })
	return append(order, rest...)
}

// blocker returns what the children of template t wait for, if anything:
// the first child, among the CRDs and Namespaces and the children of the
// templates t depends on, that is not Current. states of those children
// must be final (applyOrder places them before t's).
func blocker(t string, deps []string, states []childState) *wait {
	check := func(s childState) *wait {
		switch {
		case s.waiting:
			return &wait{template: t, dep: s.template, on: s.label + ": not applied yet, it waits too"}
		case !s.live:
			return &wait{template: t, dep: s.template, on: s.label + ": not created yet"}
		case !s.health.Ready():
			return &wait{template: t, dep: s.template, on: s.label + ": " + s.health.String()}
		}
		return nil
	}
	for _, s := range states {
		if s.first {
			if w := check(s); w != nil {
				return w
			}
		}
	}
	for _, d := range deps {
		for _, s := range states {
			if s.template == d && !s.first {
				if w := check(s); w != nil {
					return w
				}
			}
		}
	}
	return nil
}

// describe says what is not ready about a child.
func describe(s childState) string {
	switch s.health.Status {
	case health.InProgress:
		return s.label + " " + s.health.Message
	case health.Failed:
		return s.label + " failed: " + s.health.Message
	}
	return s.label + " " + s.health.String()
}

// maxListed bounds the children a condition message names.
const maxListed = 5

func listed(parts []string) string {
	if len(parts) > maxListed {
		parts = append(parts[:maxListed:maxListed], fmt.Sprintf("and %d more", len(parts)-maxListed))
	}
	return strings.Join(parts, "; ")
}

// readiness computes, after a reconcile that got through, the Ready
// condition and Reconciling or Stalled, from the children's health, the
// templates that wait, and a prune held back; and .Ready for status.yaml.
//
//   - Ready=True: every child is Current, none waits, no prune is held.
//   - a child Failed: Ready=False with that child's reason and message,
//     and Stalled=True (ChildFailed): the object will not get Ready by
//     itself. This is kstatus' reading (its Failed is Stalled), what Flux
//     and Argo CD report for a failed Job or Deployment.
//   - otherwise Ready=False and Reconciling=True, naming the children not
//     Current and the templates that wait, and for what.
func readiness(states []childState, waits []wait, pruneHeld bool, generation int64) ([]metav1.Condition, bool) {
	var failed, notReady []string
	var reason string
	counted := 0
	for _, s := range states {
		if !s.live {
			continue // waits: reported as such
		}
		counted++
		switch s.health.Status {
		case health.Current:
		case health.Failed:
			if reason == "" {
				reason = s.health.Reason
			}
			failed = append(failed, describe(s))
		default:
			notReady = append(notReady, describe(s))
		}
	}
	var waiting []string
	for _, w := range waits {
		waiting = append(waiting, w.String())
	}
	if len(failed) > 0 {
		msg := listed(append(append(failed, notReady...), waiting...))
		return []metav1.Condition{
			status.New(status.ConditionReady, metav1.ConditionFalse, reason, status.ReasonChildFailed, msg, generation),
			status.New(status.ConditionStalled, metav1.ConditionTrue, status.ReasonChildFailed, status.ReasonChildFailed, msg, generation),
		}, false
	}
	if len(notReady) == 0 && len(waiting) == 0 && !pruneHeld {
		msg := fmt.Sprintf("all %d children are ready", counted)
		switch counted {
		case 0:
			msg = "no children"
		case 1:
			msg = "its child is ready"
		}
		return []metav1.Condition{status.New(status.ConditionReady, metav1.ConditionTrue, status.ReasonReady, status.ReasonReady, msg, generation)}, true
	}
	parts := append(notReady, waiting...)
	reason = status.ReasonChildrenNotReady
	progress := status.ReasonProgressing
	if len(waiting) > 0 {
		reason, progress = status.ReasonWaitingForDependencies, status.ReasonWaitingForDependencies
	}
	if pruneHeld {
		parts = append(parts, "a prune is held back (see PruneHeld)")
		if len(notReady) == 0 && len(waiting) == 0 {
			reason, progress = status.ConditionPruneHeld, status.ConditionPruneHeld
		}
	}
	msg := listed(parts)
	return []metav1.Condition{
		status.New(status.ConditionReady, metav1.ConditionFalse, reason, status.ReasonChildrenNotReady, msg, generation),
		status.New(status.ConditionReconciling, metav1.ConditionTrue, progress, status.ReasonProgressing, msg, generation),
	}, false
}

// failure returns Ready, and Stalled or Reconciling, for a reconcile that
// failed: Stalled when retrying cannot help (classify's terminal: a
// template error, a child it may not have, an ownership conflict, a
// forbidden request), Reconciling while it is retried.
func failure(reason, msg string, terminal bool, generation int64) []metav1.Condition {
	ready := status.New(status.ConditionReady, metav1.ConditionFalse, reason, status.ReasonApplyFailed, msg, generation)
	if terminal {
		return []metav1.Condition{ready, status.New(status.ConditionStalled, metav1.ConditionTrue, reason, status.ReasonApplyFailed, msg, generation)}
	}
	return []metav1.Condition{ready, status.New(status.ConditionReconciling, metav1.ConditionTrue, reason, status.ReasonApplyFailed, msg, generation)}
}

// statusChildren is .Children for status.yaml: each live child, on a
// shallow copy (the object may be the cache's), with its health. It is
// keyed by Kind.group, so that two kinds of one name cannot collide; the
// render adds the bare Kind where it is unique.
func statusChildren(states []childState, lives []*unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for i, live := range lives {
		if live == nil {
			continue
		}
		key := live.GetKind()
		if g := live.GroupVersionKind().Group; g != "" {
			key += "." + g
		}
		if out[key] == nil {
			out[key] = map[string]any{}
		}
		c := maps.Clone(live.Object)
		c["health"] = states[i].health.Value()
		out[key][live.GetName()] = c
	}
	return out
}

// current are the objects of the children that are live and Current:
// objs[i] is the i-th child's (as planned, or live; nil when none), for
// the records of catalog.Kind.Record.
func current(objs []*unstructured.Unstructured, states []childState) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i, o := range objs {
		if o != nil && states[i].live && states[i].health.Ready() {
			out = append(out, o)
		}
	}
	return out
}
