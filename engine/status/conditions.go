package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ConditionReconciled is the type of the condition the engine owns.
const ConditionReconciled = "Reconciled"

// Reasons of the Reconciled condition.
const (
	ReasonReconciled   = "Reconciled"
	ReasonRenderFailed = "RenderFailed"
	ReasonApplyFailed  = "ApplyFailed"
	ReasonStatusFailed = "StatusFailed"
)

// maxMessage keeps a condition message under the API's limit (32768) with room
// for the rest of the object.
const maxMessage = 4096

// Reconciled returns the Reconciled condition for generation: True when reason
// is ReasonReconciled, False otherwise.
func Reconciled(reason, message string, generation int64) metav1.Condition {
	st := metav1.ConditionFalse
	if reason == ReasonReconciled {
		st = metav1.ConditionTrue
	}
	if len(message) > maxMessage {
		message = message[:maxMessage] + "..."
	}
	if message == "" {
		message = reason
	}
	return metav1.Condition{Type: ConditionReconciled, Status: st, Reason: reason, Message: message, ObservedGeneration: generation}
}

// conditionsOf reads a conditions list from unstructured content, skipping
// entries that are not conditions.
func conditionsOf(v any) []metav1.Condition {
	items, _ := v.([]any)
	out := make([]metav1.Condition, 0, len(items)+1)
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil || c.Type == "" {
			continue
		}
		out = append(out, c)
	}
	return out
}

// mergeConditions returns the conditions to write: the desired ones (the
// template's, or the current ones on a failure) with cond set, each keeping
// its current lastTransitionTime while its status is unchanged.
func mergeConditions(current, desired []metav1.Condition, cond metav1.Condition, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(desired)+1)
	for _, d := range append(desired, cond) {
		if d.LastTransitionTime.IsZero() {
			d.LastTransitionTime = now
		}
		if cur := meta.FindStatusCondition(current, d.Type); cur != nil && cur.Status == d.Status {
			d.LastTransitionTime = cur.LastTransitionTime
		}
		meta.SetStatusCondition(&out, d)
		if c := meta.FindStatusCondition(out, d.Type); c != nil {
			// SetStatusCondition keeps the first LTT it saw for a type;
			// ours above is the one to keep.
			c.LastTransitionTime = d.LastTransitionTime
		}
	}
	return out
}

func conditionsToUnstructured(cs []metav1.Condition) ([]any, error) {
	out := make([]any, 0, len(cs))
	for i := range cs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
