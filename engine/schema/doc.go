// Package schema parses the short schema of kind.yaml (its spec and status
// fields) into the OpenAPI v3 schema of a CustomResourceDefinition.
//
// It is the first half of "a kind folder is its own CRD":
//
//	kind.yaml spec/status (short) -> schema (this package) -> JSONSchemaProps
//	  -> crd: the whole CustomResourceDefinition (names, status subresource,
//	     the engine's status fields, printer columns, CEL rules)
//
// The syntax follows kro's SimpleSchema: a field is `name: "type | markers"`,
// a nested mapping is an object, and the markers are the OpenAPI keywords a
// template author needs (required, default, minimum, enum, pattern...). What
// differs, and why:
//
//   - Arrays of objects are written in place, as a one-item list holding the
//     item's fields, or as a mapping whose `_` key gives the type line of the
//     mapping itself (`_: "[]object | minItems=1"`), instead of kro's named
//     custom types: kind.yaml has no section for them and a folder's schema
//     is small.
//   - Flags need no value (`required`, `immutable`); `required=true` works too.
//   - `validation="CEL" message="..."` pairs, listType/listMapKeys, mapType,
//     intOrString and quantity cover what the hand-written CRDs of the
//     examples used, so that none of them needs a crd.yaml.
//   - Every marker is checked against the field's type, a default against the
//     field's own bounds, and every error names the field's path
//     (spec.ports[].port) so that a bad schema is a kind.yaml error at load.
//
// The package is pure (no I/O, no dependency on the catalog) and its output
// is deterministic: properties are maps and required lists are sorted.
// The full syntax is in docs/schema.md.
package schema
