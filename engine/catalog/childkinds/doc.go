// Package childkinds reads, from the text of a folder's child templates and
// without rendering them, which kinds of children they can render: what
// `operator rbac` grants and lint checks (catalog.Kind.ChildKinds).
//
//	render: the folder's parsed templates (Set.Trees)
//	  -> childkinds (this package): Read -> the kinds, and the manifests
//	     whose kind no text says
//	  -> catalog: Kind.ChildKinds, once per folder -> rbac, lint
//
// # Responsibilities
//
//   - Walk every child template's parse tree through every branch of if,
//     with and range, into the helpers include and template call by a
//     literal name (read.go), splitting the text that can come out at
//     `---` lines as the render does (render.Separator).
//   - Read each document's top-level apiVersion: and kind: lines as YAML
//     would: a literal is a kind; a value an action prints, or a document
//     without such lines, is unknown, with its file and line (Place).
//   - For a Helm chart (a NeverApplied given), leave out the documents
//     whose metadata.annotations hold a literal helm.sh/hook that is never
//     applied, only when the text alone says what YAML will read there
//     (hooks.go); which functions may print lines of their own is
//     render's fact (render.PrintsLines).
//   - Bound the work of one folder (maxSteps): a folder past it is an
//     error that asks for kind.yaml's children.
//
// It imports render and chart (the hook annotation), nothing downstream.
package childkinds
