// Package catalog turns a templates directory into the kinds the operator
// serves. It is the first step of the flow and runs once per folder, not per
// reconcile:
//
//	catalog (this package): templates/<folder>/kind.yaml + templates -> Kind
//	  -> controller: informer, queue and workers for Kind.GVK
//	  -> reconcile: render -> apply children -> observe -> status
//
// # Responsibilities
//
//   - Find the kind folders: each sub-folder holding a kind.yaml.
//   - Read kind.yaml strictly (an unknown field is an error, not a silent
//     no-op) and check it.
//   - Parse the folder's templates once (render.Parse; a chart's with
//     Helm's loader, engine/chart), so that a broken template is reported
//     at load with its file and line, never at reconcile time.
//   - Keep one bad folder from stopping the others: Load returns the valid
//     kinds and, separately, an error for each folder it skipped.
//   - Hold the folder's format (format.go: a folder of templates, a Helm
//     chart), picked once by Compile, and answer for it: what a format
//     adds to a render, to the plan, to ownership, to the deletion and to
//     the status schema is asked of the Kind, so that nothing downstream
//     branches on the format.
//   - Say which child kinds a folder can render (Kind.ChildKinds, when
//     first asked): read from the templates' text by catalog/childkinds,
//     then kind.yaml's children.
package catalog
