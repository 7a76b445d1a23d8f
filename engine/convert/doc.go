// Package convert converts the objects of a kind between its versions
// with the folder's conversion templates: the pure step behind the CRD's
// conversion webhook (engine/webhook), lint's round trips and the
// author's loop. It imports no client and does no I/O.
//
// # Responsibilities
//
//   - Compile checks a folder's conversion templates
//     (convert.<from>.<to>.yaml, engine/layout): for each version but
//     the hub, one to the hub and one from it; none for an unknown
//     version, none between two versions that are not the hub. It parses
//     them once, with the folder's helpers, as a render.Set of their own.
//   - Convert renders an object at its version into the target version,
//     through the hub when neither is the hub. apiVersion and kind are
//     filled in when the template leaves them out, metadata is the
//     source's when it does; a template may change only the labels and
//     annotations of metadata, as the API server requires of a
//     conversion.
//   - Convert is lossless: what the target version cannot hold is kept in
//     the annotation operator.tmplop.io/kept-<version> (KeptAnnotation),
//     so that A -> B -> A gives back the object it started from, unless
//     the folder marks a version lossy.
//
// # Workflow
//
//	catalog.Compile: kind.yaml's versions + the folder's convert.*.yaml
//	  -> convert.Compile (this package): a Converter, once per folder
//	  -> webhook /convert: Converter.ConvertList(ConversionReview's objects)
//	  -> lint: round trips of the samples through every version
//
// One step from version A to B renders T(A->B) over the object, puts
// back what the object's kept-B annotation holds (what B had that A could
// not), then renders T(B->A) over the result and compares it with the
// object: where they differ, the result gets kept-A, a JSON object
// {"set": {pointer: value}, "absent": [pointer]} of RFC 6901 pointers,
// sorted, that turns T(B->A)'s output back into the object exactly.
//
// Each render has the kind's render budget (render.Budget): a conversion
// costs at most what a render of the folder may.
package convert
