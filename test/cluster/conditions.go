package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ConditionTimeout is how long WaitCondition waits: a reconcile takes
// milliseconds, a loaded machine's control plane seconds.
const ConditionTimeout = 30 * time.Second

// Condition returns the condition of type typ of obj's status.conditions,
// the zero Condition (Status "") when it has none.
func Condition(obj *unstructured.Unstructured, typ string) metav1.Condition {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != typ {
			continue
		}
		s := func(k string) string { v, _ := m[k].(string); return v }
		gen, _ := m["observedGeneration"].(int64)
		since, _ := time.Parse(time.RFC3339, s("lastTransitionTime"))
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(s("status")), Reason: s("reason"),
			Message: s("message"), ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(since)}
	}
	return metav1.Condition{}
}

// ObservedGeneration is the object's status.observedGeneration, 0 when it
// has none.
func ObservedGeneration(obj *unstructured.Unstructured) int64 {
	gen, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	return gen
}

// WaitCondition waits, at most ConditionTimeout, until the object has the
// condition typ with status and reason and a message holding every
// fragment, in a status written for the object's current generation, and
// returns the object as it was then.
func (c *Cluster) WaitCondition(t testing.TB, res schema.GroupVersionResource, ns, name, typ, status, reason string, fragments ...string) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	what := fmt.Sprintf("%s %s: %s=%s %s", res.Resource, key(ns, name), typ, status, reason)
	if len(fragments) > 0 {
		what += fmt.Sprintf(" mentioning %q", fragments)
	}
	Eventually(t, ConditionTimeout, what, func(ctx context.Context) (bool, error) {
		o, err := c.Get(ctx, res, ns, name)
		if err != nil {
			return false, err
		}
		cond, gen := Condition(o, typ), ObservedGeneration(o)
		if string(cond.Status) != status || cond.Reason != reason || gen != o.GetGeneration() {
			return false, fmt.Errorf("now %s=%s %s: %s (observedGeneration %d of %d)", typ, cond.Status, cond.Reason, cond.Message, gen, o.GetGeneration())
		}
		for _, f := range fragments {
			if !strings.Contains(cond.Message, f) {
				return false, fmt.Errorf("now %s=%s %s: %s (lacks %q)", typ, cond.Status, cond.Reason, cond.Message, f)
			}
		}
		last = o
		return true, nil
	})
	return last
}

// WaitReconciled waits for Reconciled=True at the object's generation.
func (c *Cluster) WaitReconciled(t testing.TB, res schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return c.WaitCondition(t, res, ns, name, "Reconciled", "True", "Reconciled")
}
