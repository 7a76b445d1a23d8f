// Package fastyaml reads and writes YAML exactly as the API server's
// clients do (sigs.k8s.io/yaml: YAML to JSON, then JSON), without the
// JSON round trip in between, and reads the subset of YAML that templates
// print without yaml.v2's tokens, events and nodes.
//
//	render: a template's output, split into documents
//	  -> fastyaml (this package): Decode, one document -> unstructured content
//	render: toYaml
//	  -> fastyaml: Marshal, a value -> YAML
//
// # Responsibilities
//
//   - Decode one document into JSON-compatible values, whole numbers as
//     int64: the fast path (DecodeFast) for block mappings and sequences of
//     plain or quoted scalars, yaml.v2 for everything else, with the same
//     results (FuzzFastDecode, FuzzDecodeValue).
//   - Marshal a value as sigs.k8s.io/yaml's Marshal does (FuzzMarshalYAML).
//   - Count what a document's aliases expand to (AliasNodes), so that a
//     caller can refuse a document of a few hundred bytes that decodes into
//     billions of values before decoding it.
//
// It knows nothing of templates or budgets: the render charges what
// decoding costs, this package only decodes.
package fastyaml
