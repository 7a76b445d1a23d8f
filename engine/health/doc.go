// Package health judges one live child: is it what its kind calls ready?
//
//	reconcile: apply children -> health (this package), per live child ->
//	  the parent's Ready, Reconciling and Stalled conditions (engine/status),
//	  .Children.<Kind>.<name>.health and .Ready in status.yaml
//
// # Responsibilities
//
//   - Judge a child Current, InProgress, Failed or Unknown, with a message,
//     by kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status.Compute): the
//     rules kubectl, Flux and kpt share for Deployments, StatefulSets,
//     DaemonSets, ReplicaSets, Jobs, Pods, Services, PVCs, CRDs and any
//     object with standard conditions and observedGeneration.
//   - Where a parent's readiness needs more than kstatus says, say more: a
//     Job is Current once it completed (kstatus calls a started Job
//     Current), a Pod that failed is Failed, and the replica workloads say
//     "1/2 available".
//   - Let a kind folder judge kinds kstatus cannot (kind.yaml readyWhen): a
//     Go template over the live child that prints true when it is ready.
//     Expressions are parsed once, at load (NewChecker), and evaluated as
//     a render is (render.Expr): with the templates' functions, under a
//     time and output budget, abandoned past their deadline; an expression
//     that fails is Unknown, with the render's error as the message.
//   - Read nothing but the object given: health comes from the objects the
//     reconcile already holds (the apply's response, the children watch),
//     never from a request of its own. The object is not modified.
package health
