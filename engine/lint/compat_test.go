package lint

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestSchemaChanges compares an older version's spec schema with a newer
// one's: the breaking changes are listed by path, the compatible ones are
// not.
func TestSchemaChanges(t *testing.T) {
	cases := []struct {
		name     string
		old, new string // the spec schemas, YAML
		want     []string
	}{
		{"same", `{type: object, properties: {a: {type: string}}}`, `{type: object, properties: {a: {type: string}}}`, nil},
		{"optional field added", `{type: object, properties: {a: {type: string}}}`, `{type: object, properties: {a: {type: string}, b: {type: integer}}}`, nil},
		{"enum widened", `{type: object, properties: {a: {type: string, enum: [x]}}}`, `{type: object, properties: {a: {type: string, enum: [x, "y"]}}}`, nil},
		{"enum dropped", `{type: object, properties: {a: {type: string, enum: [x]}}}`, `{type: object, properties: {a: {type: string}}}`, nil},
		{"integer to number", `{type: object, properties: {a: {type: integer}}}`, `{type: object, properties: {a: {type: number}}}`, nil},
		{"to int-or-string", `{type: object, properties: {a: {type: integer}}}`, `{type: object, properties: {a: {x-kubernetes-int-or-string: true}}}`, nil},
		{"bounds loosened", `{type: object, properties: {a: {type: integer, minimum: 1, maximum: 5}}}`, `{type: object, properties: {a: {type: integer, minimum: 0, maximum: 9}}}`, nil},
		{"required dropped", `{type: object, required: [a], properties: {a: {type: string}}}`, `{type: object, properties: {a: {type: string}}}`, nil},
		{"removed into a free-form object", `{type: object, properties: {a: {type: string}}}`, `{type: object, x-kubernetes-preserve-unknown-fields: true}`, nil},
		{"description changed", `{type: object, properties: {a: {type: string, description: one}}}`, `{type: object, properties: {a: {type: string, description: two}}}`, nil},

		{"removed", `{type: object, properties: {a: {type: string}, b: {type: string}}}`, `{type: object, properties: {a: {type: string}}}`, []string{".spec.b removed"}},
		{"type changed", `{type: object, properties: {a: {type: string}}}`, `{type: object, properties: {a: {type: integer}}}`, []string{".spec.a type string -> integer"}},
		{"number to integer", `{type: object, properties: {a: {type: number}}}`, `{type: object, properties: {a: {type: integer}}}`, []string{".spec.a type number -> integer"}},
		{"new required", `{type: object, properties: {a: {type: string}}}`, `{type: object, required: [b], properties: {a: {type: string}, b: {type: string}}}`, []string{".spec.b newly required"}},
		{"enum narrowed", `{type: object, properties: {a: {type: string, enum: [x, "y", z]}}}`, `{type: object, properties: {a: {type: string, enum: [x]}}}`, []string{`.spec.a enum narrowed: "y", "z" removed`}},
		{"enum added", `{type: object, properties: {a: {type: string}}}`, `{type: object, properties: {a: {type: string, enum: [x]}}}`, []string{`.spec.a enum added: "x"`}},
		{"maximum lowered", `{type: object, properties: {a: {type: integer, maximum: 10}}}`, `{type: object, properties: {a: {type: integer, maximum: 5}}}`, []string{".spec.a maximum 10 -> 5"}},
		{"minimum raised", `{type: object, properties: {a: {type: integer, minimum: 0}}}`, `{type: object, properties: {a: {type: integer, minimum: 1}}}`, []string{".spec.a minimum 0 -> 1"}},
		{"maxLength added", `{type: object, properties: {a: {type: string}}}`, `{type: object, properties: {a: {type: string, maxLength: 3}}}`, []string{".spec.a maxLength 3 added"}},
		{"pattern changed", `{type: object, properties: {a: {type: string, pattern: "^a"}}}`, `{type: object, properties: {a: {type: string, pattern: "^b"}}}`, []string{`.spec.a pattern "^a" -> "^b"`}},
		{"in a list", `{type: object, properties: {l: {type: array, items: {type: object, properties: {p: {type: integer}}}}}}`, `{type: object, properties: {l: {type: array, items: {type: object, properties: {}}}}}`, []string{".spec.l[].p removed"}},
		{"in a map", `{type: object, properties: {m: {type: object, additionalProperties: {type: string}}}}`, `{type: object, properties: {m: {type: object, additionalProperties: {type: boolean}}}}`, []string{".spec.m.* type string -> boolean"}},
		{"free-form to fields", `{type: object, x-kubernetes-preserve-unknown-fields: true}`, `{type: object, properties: {a: {type: string}}}`, []string{".spec keeps unknown fields at the older version, only a at the newer"}},
		{"several, in path order", `{type: object, properties: {b: {type: string}, a: {type: string}}}`, `{type: object, properties: {}}`, []string{".spec.a removed", ".spec.b removed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, b := range schemaChanges(specRoot(t, c.old), specRoot(t, c.new)) {
				got = append(got, b.path+" "+b.what)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// specRoot is a version's root schema whose spec is spec (YAML).
func specRoot(t *testing.T, spec string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	var s apiextensionsv1.JSONSchemaProps
	if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"apiVersion": {Type: "string"}, "kind": {Type: "string"}, "metadata": {Type: "object"}, "spec": s,
	}}
}
