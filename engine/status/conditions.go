package status

import (
	"regexp"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The types of the conditions the engine owns.
const (
	// ConditionReconciled tells whether the last reconcile of the object's
	// generation did all it had to.
	ConditionReconciled = "Reconciled"
	// ConditionPruneHeld is present while the deletion guard holds back a
	// prune that would remove much of what the object has (see reconcile).
	// Its lastTransitionTime is when the hold began.
	ConditionPruneHeld = "PruneHeld"
	// ConditionSuspended is True while the object is suspended (the
	// annotation operator.tmplop.io/suspend: "true", or kind.yaml's
	// suspend field): nothing of it is written but this condition, whose
	// lastTransitionTime is when the suspension began. Once resumed it is
	// False (reason Resumed), since the resumption.
	ConditionSuspended = "Suspended"
	// ConditionDrifted is True while children of the object differ from
	// their unchanged render in fields the operator applies and kind.yaml
	// says drift: warn (they are left as they are); its message lists
	// them with the JSON pointers of the fields. False once none does.
	ConditionDrifted = "Drifted"

	// The kstatus conditions (docs/readiness.md). Ready is True when the
	// last reconcile succeeded and every child is Current. Reconciling
	// and Stalled are "abnormal-true": present (True) only while work is
	// in progress, or while the object cannot get further without a
	// person; absent otherwise. They are never both present.
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// Reasons of the Ready, Reconciling and Stalled conditions. A failed
// reconcile reports its own reason (ReasonRenderFailed...), and a failed
// child its own (a Job's BackoffLimitExceeded) in Ready.
const (
	ReasonReady = "Ready"
	// ReasonChildrenNotReady: some children are not Current yet.
	ReasonChildrenNotReady = "ChildrenNotReady"
	// ReasonProgressing: Reconciling while children are InProgress.
	ReasonProgressing = "Progressing"
	// ReasonWaitingForDependencies: children are not applied until the
	// children they depend on are Current (kind.yaml dependsOn).
	ReasonWaitingForDependencies = "WaitingForDependencies"
	// ReasonChildFailed: Stalled because a child failed (a Job that
	// failed, a Deployment past its progress deadline).
	ReasonChildFailed = "ChildFailed"
)

// Reasons of the Reconciled condition.
const (
	ReasonReconciled = "Reconciled"
	// ReasonRenderFailed: a template failed (with file and line), ran out
	// of its render budget, or rendered a child its kind may not have.
	ReasonRenderFailed = "RenderFailed"
	// ReasonLookupFailed: a lookup could not be served yet; retried.
	ReasonLookupFailed = "LookupFailed"
	// ReasonOwnershipConflict: a child exists and is not this object's.
	ReasonOwnershipConflict = "OwnershipConflict"
	// ReasonNonDeterministic: a child renders differently every time with
	// the same input; it is not re-applied.
	ReasonNonDeterministic = "NonDeterministic"
	ReasonApplyFailed      = "ApplyFailed"
	ReasonStatusFailed     = "StatusFailed"
	// ReasonRevisionUnavailable: the revision of the folder the kind's
	// rollout gives the object cannot be served (its record gone or edited
	// by hand, its files not compiling, its account not agreed to):
	// nothing is applied, its children stay as they are.
	ReasonRevisionUnavailable = "RevisionUnavailable"
)

// Reasons of the Suspended and Drifted conditions.
const (
	ReasonSuspendedByAnnotation = "SuspendedByAnnotation"
	ReasonSuspendedByField      = "SuspendedByField"
	ReasonResumed               = "Resumed"
	// ReasonDrifted: children were edited by hand in fields the operator
	// applies (Drifted=True); ReasonInSync: none is any more.
	ReasonDrifted = "Drifted"
	ReasonInSync  = "InSync"
	// ReasonDriftRepaired is the Event of a drifted child applied again
	// (kind.yaml drift: repair, the default).
	ReasonDriftRepaired = "DriftRepaired"
)

// Reasons of the PruneHeld condition.
const (
	ReasonMassDeletion = "MassDeletion"
	ReasonLookupEmpty  = "LookupEmpty"
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

// New returns a condition of the engine's for generation. A reason that is
// not a valid condition reason (a child's own, say) becomes fallback; an
// empty message becomes the reason.
func New(typ string, st metav1.ConditionStatus, reason, fallback, message string, generation int64) metav1.Condition {
	if !validReason.MatchString(reason) || len(reason) > 1024 {
		reason = fallback
	}
	if len(message) > maxMessage {
		message = message[:maxMessage] + "..."
	}
	if message == "" {
		message = reason
	}
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: message, ObservedGeneration: generation}
}

// validReason is metav1.Condition's reason pattern.
var validReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// engineConditions are the types of the conditions the engine writes
// (docs/templates.md, "Status: who owns what"): a condition of one of
// these types that status.yaml renders is overwritten, or removed. The
// kstatus ones (readiness) go as a set: when the engine sends Ready, any
// of them it does not send is removed.
var engineConditions = map[string]struct{ readiness bool }{
	ConditionReconciled:  {},
	ConditionPruneHeld:   {},
	ConditionSuspended:   {},
	ConditionDrifted:     {},
	ConditionReady:       {readiness: true},
	ConditionReconciling: {readiness: true},
	ConditionStalled:     {readiness: true},
}

// EngineOwned reports whether conditions of type typ are the engine's, not
// status.yaml's to render (lint's LNT302).
func EngineOwned(typ string) bool {
	_, ok := engineConditions[typ]
	return ok
}

// readiness reports whether typ is one of kstatus' conditions.
func readiness(typ string) bool { return engineConditions[typ].readiness }

// PruneHeld returns the PruneHeld condition, which began at since.
func PruneHeld(reason, message string, generation int64, since metav1.Time) metav1.Condition {
	if len(message) > maxMessage {
		message = message[:maxMessage] + "..."
	}
	return metav1.Condition{Type: ConditionPruneHeld, Status: metav1.ConditionTrue, Reason: reason, Message: message,
		ObservedGeneration: generation, LastTransitionTime: since}
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

// Find returns the condition of type typ in a status's conditions.
func Find(status map[string]any, typ string) *metav1.Condition {
	return meta.FindStatusCondition(conditionsOf(status["conditions"]), typ)
}

// mergeConditions returns the conditions to write: the desired ones (the
// template's, or the current ones on a failure) with the engine's set,
// each keeping its current lastTransitionTime while its status is
// unchanged. An engine condition with a lastTransitionTime of its own keeps
// it: that is how the engine restarts a clock without a status change.
func mergeConditions(current, desired, engine []metav1.Condition, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(desired)+len(engine))
	for i, d := range append(desired, engine...) {
		explicit := i >= len(desired) && !d.LastTransitionTime.IsZero()
		if d.LastTransitionTime.IsZero() {
			d.LastTransitionTime = now
		}
		if cur := meta.FindStatusCondition(current, d.Type); !explicit && cur != nil && cur.Status == d.Status {
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
