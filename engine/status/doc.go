// Package status computes and writes a custom resource's .status, the last
// step of a reconcile:
//
//	render -> apply children -> observe -> status (this package)
//
// # Responsibilities
//
//   - Own status.observedRevision, the revision of the kind's folder the
//     object was last reconciled with (engine/revision, DesiredAt; kept as
//     it is when none is known, so that a CRD whose schema strips it
//     costs no write).
//   - Own status.observedGeneration and the condition of type Reconciled
//     (True/Reconciled, or False with RenderFailed, ApplyFailed or
//     StatusFailed and a message naming the template file and line), and
//     kstatus' Ready, Reconciling and Stalled (computed by reconcile,
//     docs/readiness.md): when the engine sends Ready, any of the three it
//     does not send is removed, whatever status.yaml renders; status.yaml
//     owns every other field it renders. Which condition types are the
//     engine's is written once (EngineOwned, conditions.go), and lint
//     reads it.
//   - Keep a condition's lastTransitionTime while its status does not
//     change, as meta.SetStatusCondition does.
//   - On a failure, keep the status fields of the last good render rather
//     than wiping them: a broken template must not blank what users see.
//   - Write through the status subresource with server-side apply, and not
//     at all when the status would not change: the operator's writes at rest
//     are zero.
package status
