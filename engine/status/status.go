package status

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Writer writes a status; *kube.Client is one. It returns the metadata
// of the object as the write left it.
type Writer interface {
	ApplyStatus(ctx context.Context, obj *unstructured.Unstructured) (written metav1.Object, err error)
}

// Desired returns the whole .status to write for obj: rendered (the output
// of status.yaml), or, when rendered is nil because this reconcile failed
// before status.yaml could run, the current status unchanged; plus
// observedGeneration and the engine's conditions (Reconciled, PruneHeld,
// and Ready with Reconciling and Stalled when they are true). The
// observedRevision the status holds, if any, is kept (DesiredAt).
func Desired(obj *unstructured.Unstructured, rendered map[string]any, engine []metav1.Condition, now time.Time) (map[string]any, error) {
	return DesiredAt(obj, rendered, engine, now, 0)
}

// DesiredAt is Desired for an object reconciled with the kind's revision
// numbered revision (engine/revision), which observedRevision says. 0:
// no revision is recorded on the object (its CRD's status schema has no
// place for it, or none is known, as in a preview): the status's own
// observedRevision, if any, is kept, so that the desired status never
// differs from a status the API server stripped of it.
func DesiredAt(obj *unstructured.Unstructured, rendered map[string]any, engine []metav1.Condition, now time.Time, revision int64) (map[string]any, error) {
	current, _, _ := unstructured.NestedMap(obj.Object, "status")
	base := rendered
	if base == nil {
		base = current
	}
	// A JSON round trip copies base (it must not alias the informer cache)
	// and gives it the API's types.
	out, err := Normalize(base)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	own := conditionsOf(out["conditions"])
	if slices.ContainsFunc(engine, func(c metav1.Condition) bool { return c.Type == ConditionReady }) {
		// The engine owns Ready, Reconciling and Stalled: one it does not
		// send now is no longer true, whatever status.yaml or the last
		// status said.
		own = slices.DeleteFunc(own, func(c metav1.Condition) bool { return readiness(c.Type) })
	}
	merged := mergeConditions(conditionsOf(current["conditions"]), own, engine,
		metav1.NewTime(now.UTC().Truncate(time.Second)))
	conds, err := conditionsToUnstructured(merged)
	if err != nil {
		return nil, fmt.Errorf("conditions: %w", err)
	}
	out["conditions"] = conds
	out["observedGeneration"] = obj.GetGeneration()
	if revision > 0 {
		out[FieldObservedRevision] = revision
	} else if v, ok := current[FieldObservedRevision]; ok {
		out[FieldObservedRevision] = v
	}
	return Normalize(out)
}

// Held is Desired for an object the engine holds still (suspended): its
// current status with the engine's conditions merged, and its
// observedGeneration as it was, for the generations since were not
// reconciled. A spec change of a held object changes nothing Held returns.
func Held(obj *unstructured.Unstructured, engine []metav1.Condition, now time.Time) (map[string]any, error) {
	out, err := Desired(obj, nil, engine, now)
	if err != nil {
		return nil, err
	}
	if g, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "observedGeneration"); ok {
		out["observedGeneration"] = g
	} else {
		delete(out, "observedGeneration")
	}
	return Normalize(out)
}

// FieldObservedRevision is the status field of the revision of the kind's
// folder an object was last reconciled with (DesiredAt).
const FieldObservedRevision = "observedRevision"

// Unchanged reports whether obj's status already is desired.
func Unchanged(obj *unstructured.Unstructured, desired map[string]any) bool {
	current, _, _ := unstructured.NestedMap(obj.Object, "status")
	cur, err := Normalize(current)
	if err != nil {
		return false
	}
	return equality.Semantic.DeepEqual(cur, desired)
}

// Write applies desired as obj's status; the caller decides whether it is
// needed (Unchanged). It returns the metadata of the object as the write
// left it: the newest version, which may hold more than this write, a
// change someone else made since obj was read.
func Write(ctx context.Context, w Writer, obj *unstructured.Unstructured, desired map[string]any) (metav1.Object, error) {
	patch := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": obj.GetAPIVersion(),
		"kind":       obj.GetKind(),
		"metadata":   map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()},
		"status":     desired,
	}}
	written, err := w.ApplyStatus(ctx, patch)
	if err != nil {
		return nil, fmt.Errorf("write status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return written, nil
}

// Normalize gives m the types the API server returns (int64 for whole
// numbers, no typed values), so that comparing it with a live status means
// comparing content.
func Normalize(m map[string]any) (map[string]any, error) {
	if m == nil {
		return map[string]any{}, nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}
