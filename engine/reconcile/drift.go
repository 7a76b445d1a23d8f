package reconcile

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/status"
)

// drifted is one child that no longer holds what was applied of its
// unchanged render: the JSON pointers of the fields someone changed.
type drifted struct {
	template string
	key      apply.Key
	paths    []string
}

func (d drifted) String() string {
	paths := d.paths
	more := ""
	if len(paths) > maxDriftPaths {
		paths, more = paths[:maxDriftPaths], fmt.Sprintf(" and %d more", len(d.paths)-maxDriftPaths)
	}
	return fmt.Sprintf("%s: %s: %s%s", d.template, d.key, strings.Join(paths, ", "), more)
}

// The Drifted condition's message is capped: at most maxDriftPaths paths
// a child, maxDriftChildren children, and status.New's length.
const (
	maxDriftPaths    = 10
	maxDriftChildren = 20
)

// findDrift finds the children of the plan that drifted (apply.Desired's
// Drifted: their hash is this render's, a value is not), with the paths.
// With kind.yaml drift: warn they are left as they are: marked up to date,
// so that no step writes them (nor waits for them); with repair they are
// applied, as any child that is not as rendered.
func (r *Reconciler) findDrift(t *trip) map[int]drifted {
	var out map[int]drifted
	for i, d := range t.desired {
		if !d.Drifted || d.Live == nil {
			continue
		}
		if out == nil {
			out = map[int]drifted{}
		}
		out[i] = drifted{template: t.plan.Children[i].Template, key: d.Key, paths: apply.DriftPaths(d.Live.Object, d.Object.Object)}
		if r.Kind.DriftWarns() {
			d.UpToDate = true
		}
	}
	return out
}

// driftRepaired tells of a drifted child applied again: an Event on the
// parent, so that a repair is never silent, and the counter.
func (r *Reconciler) driftRepaired(obj *unstructured.Unstructured, d drifted) {
	r.Stats.add(&r.Stats.DriftRepaired)
	r.Recorder.Event(obj, corev1.EventTypeNormal, status.ReasonDriftRepaired, "applied again, edited by hand: "+d.String())
}

// driftCondition is the Drifted condition to write (kind.yaml drift: warn):
// True with the drifted children while there are any, False once there
// are none after there were (or the kind repairs them now); nil when the
// object never had one. A change of the drifted children or their paths
// is told once, in a Warning Event, not at every reconcile.
func (r *Reconciler) driftCondition(obj *unstructured.Unstructured, drifts map[int]drifted, order int) *metav1.Condition {
	cur := status.Find(statusOf(obj), status.ConditionDrifted)
	if !r.Kind.DriftWarns() || len(drifts) == 0 {
		if cur == nil {
			return nil
		}
		c := status.New(status.ConditionDrifted, metav1.ConditionFalse, status.ReasonInSync, status.ReasonInSync,
			"every child holds what was applied of its render", obj.GetGeneration())
		return &c
	}
	parts := make([]string, 0, len(drifts))
	for i := range order {
		if d, ok := drifts[i]; ok {
			parts = append(parts, d.String())
		}
	}
	more := ""
	if len(parts) > maxDriftChildren {
		more = fmt.Sprintf("; and %d more children", len(parts)-maxDriftChildren)
		parts = parts[:maxDriftChildren]
	}
	msg := fmt.Sprintf("%d %s edited in fields the operator applies, left as they are (kind.yaml drift: warn) until their render changes: %s%s",
		len(drifts), plural(len(drifts), "child", "children"), strings.Join(parts, "; "), more)
	c := status.New(status.ConditionDrifted, metav1.ConditionTrue, status.ReasonDrifted, status.ReasonDrifted, msg, obj.GetGeneration())
	if cur == nil || cur.Status != metav1.ConditionTrue || cur.Message != c.Message {
		if r.Stats != nil {
			r.Stats.DriftReported.Add(int64(len(drifts)))
		}
		r.Recorder.Event(obj, corev1.EventTypeWarning, status.ReasonDrifted, msg)
	}
	return &c
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
