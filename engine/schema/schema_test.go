package schema

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/internal/testsupport/golden"
)

// parseYAML parses a short schema written as kind.yaml's spec is.
func parseYAML(t testing.TB, path, doc string) (*apiextensionsv1.JSONSchemaProps, error) {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("test input: %v", err)
	}
	if path == "status" {
		return ParseStatus(m)
	}
	return Parse(path, m)
}

// compact is s as one-line JSON, the form the table's wants are written in.
func compact(t testing.TB, s *apiextensionsv1.JSONSchemaProps) string {
	t.Helper()
	data, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

func TestParse(t *testing.T) {
	cases := []struct {
		name, doc string
		// want is the schema of the field "f" (or of the root when root
		// is set), as compact JSON.
		want string
		root bool
	}{
		{name: "string", doc: `f: string`, want: `{"type":"string"}`},
		{name: "integer with bounds", doc: `f: integer | minimum=0 maximum=10 format=int32`,
			want: `{"format":"int32","maximum":10,"minimum":0,"type":"integer"}`},
		{name: "exclusive bounds and multipleOf", doc: `f: number | minimum=0 exclusiveMinimum maximum=1.5 exclusiveMaximum=true multipleOf=0.5`,
			want: `{"exclusiveMaximum":true,"exclusiveMinimum":true,"maximum":1.5,"minimum":0,"multipleOf":0.5,"type":"number"}`},
		{name: "boolean default", doc: `f: boolean | default=true`, want: `{"default":true,"type":"boolean"}`},
		{name: "integer default", doc: `f: integer | default=3 minimum=1`, want: `{"default":3,"minimum":1,"type":"integer"}`},
		{name: "number default", doc: `f: number | default=2.5`, want: `{"default":2.5,"type":"number"}`},
		{name: "quoted string default", doc: `f: 'string | default="a b" description="say \"hi\""'`,
			want: `{"default":"a b","description":"say \"hi\"","type":"string"}`},
		{name: "empty string default", doc: `f: 'string | default=""'`, want: `{"default":"","type":"string"}`},
		{name: "string enum and default", doc: `f: string | enum=TCP,UDP,SCTP default=TCP`,
			want: `{"default":"TCP","enum":["TCP","UDP","SCTP"],"type":"string"}`},
		{name: "integer enum", doc: `f: integer | enum=1,2,3`, want: `{"enum":[1,2,3],"type":"integer"}`},
		{name: "string pattern keeps backslashes", doc: `f: 'string | pattern="^\d+(\.\d+)?$" minLength=1 maxLength=5'`,
			want: `{"maxLength":5,"minLength":1,"pattern":"^\\d+(\\.\\d+)?$","type":"string"}`},
		{name: "format date-time", doc: `f: string | format=date-time`, want: `{"format":"date-time","type":"string"}`},
		{name: "free-form object", doc: `f: object`, want: `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
		{name: "array of strings", doc: `f: "[]string | minItems=1 maxItems=3 listType=set"`,
			want: `{"items":{"type":"string"},"maxItems":3,"minItems":1,"type":"array","x-kubernetes-list-type":"set"}`},
		{name: "array default", doc: `f: "[]string | default=[]"`, want: `{"default":[],"items":{"type":"string"},"type":"array"}`},
		{name: "array default with blanks", doc: `f: '[]integer | default=[1, 2]'`, want: `{"default":[1,2],"items":{"type":"integer"},"type":"array"}`},
		{name: "nested arrays", doc: `f: "[][]integer"`, want: `{"items":{"items":{"type":"integer"},"type":"array"},"type":"array"}`},
		{name: "map", doc: `f: map[string]string | maxProperties=4`,
			want: `{"additionalProperties":{"type":"string"},"maxProperties":4,"type":"object"}`},
		{name: "map of arrays", doc: `f: map[string][]integer`,
			want: `{"additionalProperties":{"items":{"type":"integer"},"type":"array"},"type":"object"}`},
		{name: "map default", doc: `f: 'map[string]integer | default={"a": 1}'`,
			want: `{"additionalProperties":{"type":"integer"},"default":{"a":1},"type":"object"}`},
		{name: "intOrString", doc: `f: intOrString | default=80`,
			want: `{"anyOf":[{"type":"integer"},{"type":"string"}],"default":80,"x-kubernetes-int-or-string":true}`},
		{name: "intOrString quoted default is a string", doc: `f: 'intOrString | default="80"'`,
			want: `{"anyOf":[{"type":"integer"},{"type":"string"}],"default":"80","x-kubernetes-int-or-string":true}`},
		{name: "quantity", doc: `f: quantity | default=500m`,
			want: `{"anyOf":[{"type":"integer"},{"type":"string"}],"default":"500m","pattern":"` + strings.ReplaceAll(quantityPattern, `\`, `\\`) + `","x-kubernetes-int-or-string":true}`},
		{name: "nested object", doc: "f:\n  a: string | required\n  b: integer\n",
			want: `{"properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"],"type":"object"}`},
		{name: "object markers in _", doc: "f:\n  _: object | required description=\"The f.\" mapType=atomic\n  a: string\n",
			want: `{"description":"The f.","properties":{"a":{"type":"string"}},"type":"object","x-kubernetes-map-type":"atomic"}`},
		{name: "_ without a type", doc: "f:\n  _: '| description=\"x\"'\n  a: string\n",
			want: `{"description":"x","properties":{"a":{"type":"string"}},"type":"object"}`},
		{name: "list of one mapping", doc: "f:\n  - port: integer | required\n    name: string\n",
			want: `{"items":{"properties":{"name":{"type":"string"},"port":{"type":"integer"}},"required":["port"],"type":"object"},"type":"array"}`},
		{name: "list of one type line", doc: "f: ['string | enum=a,b']",
			want: `{"items":{"enum":["a","b"],"type":"string"},"type":"array"}`},
		{name: "array of objects with _", doc: "f:\n  _: '[]object | minItems=1 listType=map listMapKeys=port,protocol'\n  port: integer | required\n  protocol: string | default=TCP\n",
			want: `{"items":{"properties":{"port":{"type":"integer"},"protocol":{"default":"TCP","type":"string"}},"required":["port"],"type":"object"},"minItems":1,"type":"array","x-kubernetes-list-map-keys":["port","protocol"],"x-kubernetes-list-type":"map"}`},
		{name: "map of objects with _", doc: "f:\n  _: map[string]object\n  a: string\n",
			want: `{"additionalProperties":{"properties":{"a":{"type":"string"}},"type":"object"},"type":"object"}`},
		{name: "object default checked against its fields", doc: "f:\n  _: 'object | default={\"a\": \"x\"}'\n  a: string\n",
			want: `{"default":{"a":"x"},"properties":{"a":{"type":"string"}},"type":"object"}`},
		{name: "immutable", doc: `f: string | immutable`,
			want: `{"type":"string","x-kubernetes-validations":[{"message":"field is immutable","rule":"self == oldSelf"}]}`},
		{name: "validation rules with and without message", doc: `f: >-
    []string | validation="self.size() < 3" message="at most 2"
    validation="self.all(x, x != '')" immutable=false`,
			want: `{"items":{"type":"string"},"type":"array","x-kubernetes-validations":[{"message":"at most 2","rule":"self.size() \u003c 3"},{"rule":"self.all(x, x != '')"}]}`},
		{name: "required=false", doc: "f:\n  a: string | required=false\n", want: `{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{name: "nullable", doc: `f: string | nullable`, want: `{"nullable":true,"type":"string"}`},
		{name: "folded line", doc: "f: >-\n  string | required\n  description=\"two\n  lines\"\n",
			want: `{"description":"two lines","type":"string"}`},
		{name: "root", root: true, doc: "_: object | description=\"The spec.\"\nb: string | required\na: integer\n",
			want: `{"description":"The spec.","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["b"],"type":"object"}`},
		{name: "empty root", root: true, doc: "{}", want: `{"type":"object"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseYAML(t, "spec", tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.root {
				f := s.Properties["f"]
				s = &f
			}
			if got := compact(t, s); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ name, path, doc, want string }{
		{"unknown marker", "spec", "ports:\n  - port: integer | minimun=1\n", `spec.ports[].port: unknown marker "minimun" (did you mean "minimum"?)`},
		{"unknown type", "spec", "a: strin", `spec.a: unknown type "strin" (did you mean "string"?)`},
		{"type hint", "spec", "a: int", `spec.a: unknown type "int": write integer`},
		{"markers without a bar", "spec", "a: string required", `spec.a: unknown type "string required" (markers follow a "|": string | required)`},
		{"no type", "spec", "a: '| required'", `spec.a: no type before the "|"`},
		{"null field", "spec", "a:", `spec.a: no type`},
		{"number field", "spec", "a: 3", `spec.a: want a type line (a string), nested fields (a mapping) or a one-item list, got float64 3`},
		{"marker kind", "spec", "a: integer | minLength=1", `spec.a: marker minLength applies to string, not to integer`},
		{"twice", "spec", "a: integer | minimum=1 minimum=2", `spec.a: marker minimum is given twice`},
		{"flag value", "spec", "a: string | required=yes", `spec.a: marker required is a flag`},
		{"value needed", "spec", "a: string | description", `spec.a: marker description needs a value`},
		{"empty value", "spec", "a: string | default= required", `spec.a: marker default= has no value`},
		{"unterminated quote", "spec", `a: 'string | description="x'`, `spec.a: unterminated quote`},
		{"bad bracket", "spec", "a: '[]string | default=[1'", `spec.a: unbalanced`},
		{"integer default", "spec", "a: integer | default=x", `spec.a: default=x: "x" is not an integer`},
		{"default below minimum", "spec", "a: integer | default=0 minimum=1", `spec.a: default=0: 0 is below the minimum 1`},
		{"default not in enum", "spec", "a: string | enum=a,b default=c", `spec.a: default=c: "c" is not one of the enum values`},
		{"default not matching pattern", "spec", `a: 'string | pattern="^a" default=b'`, `spec.a: default=b: "b" does not match the pattern ^a`},
		{"default array of wrong items", "spec", "a: '[]integer | default=[\"x\"]'", `spec.a: default=["x"]: item 0: want an integer, got x`},
		{"default object unknown field", "spec", "a:\n  _: 'object | default={\"b\": 1}'\n  a: string\n", `spec.a: default={"b": 1}: b is not a field`},
		{"default not JSON", "spec", "a: '[]string | default=x'", `spec.a: default=x: want JSON`},
		{"enum of integers", "spec", "a: integer | enum=1,x", `spec.a: enum: "x" is not an integer`},
		{"enum twice", "spec", "a: string | enum=a,a", `spec.a: enum: a is given twice`},
		{"enum empty", "spec", "a: string | enum=a,,b", `spec.a: enum: "a,,b": an empty value`},
		{"enum on array", "spec", "a: '[]string | enum=a'", `spec.a: marker enum applies to string, integer, number, boolean, intOrString, not to array`},
		{"enum value out of bounds", "spec", "a: integer | enum=1,20 maximum=10", `spec.a: enum value 20: 20 is above the maximum 10`},
		{"bad pattern", "spec", `a: 'string | pattern="("'`, `spec.a: pattern: error parsing regexp`},
		{"quantity pattern", "spec", `a: 'quantity | pattern="x"'`, `spec.a: marker pattern applies to string, intOrString, not to quantity`},
		{"bad format", "spec", "a: string | format=datetme", `spec.a: format: unknown string format "datetme" (did you mean "datetime"?)`},
		{"min above max", "spec", "a: string | minLength=3 maxLength=2", `spec.a: minLength 3 is more than maxLength 2`},
		{"negative length", "spec", "a: string | minLength=-1", `spec.a: minLength: "-1" is not a non-negative integer`},
		{"exclusive without bound", "spec", "a: integer | exclusiveMinimum", `spec.a: exclusiveMinimum needs a minimum`},
		{"message alone", "spec", `a: 'string | message="x"'`, `spec.a: message= follows the validation=`},
		{"two messages", "spec", `a: 'string | validation="true" message="x" message="y"'`, `spec.a: message= follows the validation=`},
		{"list of two", "spec", "a: [string, integer]", `spec.a: a list gives the type of its items: want one item`},
		{"required item", "spec", "a:\n  - _: object | required\n    b: string\n", `spec.a[]: the items of a list cannot be required`},
		{"_ not a string", "spec", "a:\n  _: 3\n  b: string\n", `spec.a: _ holds the type line of the mapping itself`},
		{"_ scalar type", "spec", "a:\n  _: string\n  b: string\n", `spec.a: the _ type of a mapping must end in object`},
		{"map with integer keys", "spec", "a: map[int]string", `spec.a: type "map[int]string": the keys of a map are strings in JSON: write map[string]string`},
		{"listMapKeys without listType", "spec", "a:\n  _: '[]object | listMapKeys=b'\n  b: string | required\n", `spec.a: listMapKeys needs listType=map`},
		{"list map key optional", "spec", "a:\n  _: '[]object | listType=map listMapKeys=b'\n  b: string\n", `spec.a: listMapKeys: b must be required or have a default in the items`},
		{"list map key missing", "spec", "a:\n  _: '[]object | listType=map listMapKeys=c'\n  b: string\n", `spec.a: listMapKeys: c is not a field of the items`},
		{"set of objects", "spec", "a:\n  - b: string\n", ""}, // fine: no listType
		{"set of objects with listType", "spec", "a:\n  _: '[]object | listType=set'\n  b: string\n", `spec.a: listType=set needs items that are strings, numbers or booleans`},
		{"root array", "spec", "_: '[]object'\na: string\n", `spec: the root is an object`},
		{"root required", "spec", "_: object | required\na: string\n", `spec: the root cannot be required`},
		{"deep path", "spec", "a:\n  b:\n    _: '[]map[string]object'\n    c: integer | maximum=x\n", `spec.a.b[].*.c: maximum: "x" is not a number`},
		{"status engine field", "status", "conditions: '[]object'", `status.conditions: written by the engine`},
		{"status required", "status", "phase: string | required", `status.phase: a top-level status field cannot be required`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseYAML(t, tc.path, tc.doc)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant prefix %s", err, tc.want)
			}
			var se *Error
			if !errors.As(err, &se) || !strings.HasPrefix(tc.want, se.Path+": ") {
				t.Errorf("error %v is not an *Error with the field's path", err)
			}
		})
	}
}

// TestGolden parses testdata/*.yaml, short schemas of a spec, and compares
// the OpenAPI schemas with testdata/*.golden.yaml (go test -update rewrites
// them). It also checks that the output is the same on every run.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden.yaml") {
			continue
		}
		n++
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			for range 5 { // map order varies between runs: the output must not
				s, err := parseYAML(t, "spec", string(data))
				if err != nil {
					t.Fatal(err)
				}
				out, err := yaml.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				if got != nil && !bytes.Equal(got, out) {
					t.Fatalf("two parses differ:\n%s\n%s", got, out)
				}
				got = out
			}
			golden.Check(t, strings.TrimSuffix(in, ".yaml")+".golden.yaml", got)
		})
	}
	if n == 0 {
		t.Fatal("no testdata/*.yaml")
	}
}

func TestTokenize(t *testing.T) {
	cases := []struct {
		in   string
		want []token
	}{
		{"", nil},
		{"  required  ", []token{{key: "required"}}},
		{`a=1 b="x y" c=[1, "]"] d={"k": [1]} e`, []token{
			{key: "a", value: "1", hasValue: true},
			{key: "b", value: "x y", hasValue: true, quoted: true},
			{key: "c", value: `[1, "]"]`, hasValue: true},
			{key: "d", value: `{"k": [1]}`, hasValue: true},
			{key: "e"},
		}},
		{`p="a\"b\\c\d"`, []token{{key: "p", value: `a"b\c\d`, hasValue: true, quoted: true}}},
		{"x=\"\"\ty=2", []token{{key: "x", value: "", hasValue: true, quoted: true}, {key: "y", value: "2", hasValue: true}}},
	}
	for _, tc := range cases {
		got, err := tokenize(tc.in)
		if err != nil {
			t.Errorf("tokenize(%q): %v", tc.in, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("tokenize(%q) = %+v, want %+v", tc.in, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("tokenize(%q)[%d] = %+v, want %+v", tc.in, i, got[i], tc.want[i])
			}
		}
	}
	for _, bad := range []string{`=1`, `a="x"y`, `a=[1]x`, `a!`, `a="x`, `a={`} {
		if _, err := tokenize(bad); err == nil {
			t.Errorf("tokenize(%q): no error", bad)
		}
	}
}
