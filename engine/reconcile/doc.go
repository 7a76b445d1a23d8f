// Package reconcile brings one custom resource to the state its templates
// describe. It is called by a controller worker with an object from the
// informer cache, and runs the pipeline once:
//
//	render children -> adopt (ownership) -> apply -> prune -> render status
//	-> write status
//
// # Responsibilities
//
//   - Plan: render the children and adopt them (namespace, owner reference,
//     labels). Plan is pure given a scope function, and is what
//     `operator render` prints, so the CLI shows exactly what run applies.
//   - Apply nothing if any template fails; prune only after every apply
//     succeeded; never delete on a guess.
//   - Report every failure as the Reconciled condition (RenderFailed,
//     ApplyFailed, StatusFailed, with file and line) and a Warning Event on
//     the object, and classify it for the controller: a render failure is
//     terminal until the object or the templates change; an apply or status
//     failure is retried with backoff.
//   - Children outside the parent's namespace (kind.yaml allowClusterScoped)
//     get the parent a finalizer, and are deleted before the parent goes.
package reconcile
