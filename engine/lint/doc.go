// Package lint checks kind folders without a cluster: everything about a
// folder that can be known before the operator serves it (`operator lint`,
// docs/lint.md).
//
// It loads each folder as the catalog does, but reports every broken file
// rather than the first; reads the templates' parse trees for lookups of
// kinds kind.yaml does not declare; renders every child template and
// status.yaml against each sample object of the folder's kind and against
// an object with an empty spec, with lookups that read nothing; checks the
// rendered children against what the engine does to them (ownership.Adopt:
// the fields it sets, namespace containment, one child per name); and checks
// the rendered status and the kind's CRD against what the engine writes.
//
// Every finding has a file, a line when known, a severity and a stable code
// (codes.go).
package lint
