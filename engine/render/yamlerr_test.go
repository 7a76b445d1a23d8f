package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// yamlSpec is a kind.yaml of sorts: nested structs, a list of them, a map,
// an embedded struct, and a value that decodes itself.
type yamlSpec struct {
	yamlMeta `json:",inline"`
	Kind     string            `json:"kind"`
	Workers  int               `json:"workers,omitempty"`
	Lookups  []yamlLookup      `json:"lookups,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Raw      selfDecoding      `json:"raw,omitempty"`
}

type yamlMeta struct {
	APIVersion string `json:"apiVersion"`
}

type yamlLookup struct {
	Kind     string            `json:"kind"`
	All      bool              `json:"allNamespaces,omitempty"`
	Selector map[string]string `json:"selector,omitempty"`
}

// selfDecoding takes any JSON, as metav1.Duration or apiextensions' JSON
// would take theirs.
type selfDecoding struct{ json.RawMessage }

func (s *selfDecoding) UnmarshalJSON(b []byte) error { s.RawMessage = b; return nil }

// TestYAMLError: what a strict decode refuses is located at the line of
// the file it is about, whatever refused it (the parser, yaml.v2's
// duplicate keys, encoding/json's types and unknown fields), with the
// message the decoder gave (less the parser's line, moved to Line).
func TestYAMLError(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		first int
		line  int
		msg   string // in the message
	}{
		{name: "syntax", yaml: "apiVersion: a/v1\nkind: A\nlookups:\n- kind: B\n  x\n", line: 6, // the parser's
			msg: "error converting YAML to JSON: could not find expected ':'"},
		{name: "syntax, a document from line 10 of its file", first: 10, yaml: "kind: A\nx: y: z\n", line: 11},
		{name: "unknown field", yaml: "apiVersion: a/v1\nkind: A\nworker: 3\n", line: 3, msg: `unknown field "worker"`},
		{name: "unknown field of a list's item", yaml: "kind: A\nlookups:\n- kind: B\n- kind: C\n  selectr: {a: b}\n", line: 5, msg: `unknown field "selectr"`},
		{name: "two unknown fields: the first encoding/json meets (keys sorted)", yaml: "kind: A\nzeta: 1\nalpha: 2\n", line: 3, msg: `unknown field "alpha"`},
		{name: "a key given twice", yaml: "kind: A\nworkers: 1\nlookups: []\nworkers: 2\n", line: 4, msg: `"workers" already set`},
		{name: "a value of the wrong type", yaml: "kind: A\nworkers: three\n", line: 2, msg: "cannot unmarshal string"},
		{name: "a value of the wrong type in an item", yaml: "kind: A\nlookups:\n- kind: B\n  allNamespaces: true\n- kind: C\n  allNamespaces: \"yes\"\n", line: 6, msg: "cannot unmarshal string"},
		{name: "an embedded struct's field of the wrong type", yaml: "apiVersion: [a]\nkind: A\n", line: 1, msg: "cannot unmarshal array"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first := max(tc.first, 1)
			var v yamlSpec
			err := DecodeYAML("kind.yaml", []byte(tc.yaml), &v, CodeKindYAML)
			if first > 1 {
				var decodeErr error
				v = yamlSpec{}
				if decodeErr = DecodeYAML("x", []byte(tc.yaml), &v, ""); decodeErr == nil {
					t.Fatal("decoded")
				}
				err = YAMLError("kind.yaml", first, []byte(tc.yaml), &v, CodeKindYAML, errors.Unwrap(decodeErr))
			}
			e, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("got %v (%T), want an *Error", err, err)
			}
			if e.Template != "kind.yaml" || e.Line != tc.line || e.Code != CodeKindYAML {
				t.Errorf("at %s:%d (%s), want kind.yaml:%d (%s): %s", e.Template, e.Line, e.Code, tc.line, CodeKindYAML, e.Message)
			}
			if !strings.Contains(e.Message, tc.msg) || strings.Contains(e.Message, "yaml: line") {
				t.Errorf("message %q: want %q in it, and no line of the parser's", e.Message, tc.msg)
			}
		})
	}
	for _, ok := range []string{"kind: A\nWorkers: 3\n", "kind: A\nraw: {any: [thing]}\nlabels: {a: b}\n"} {
		var v yamlSpec
		if err := DecodeYAML("kind.yaml", []byte(ok), &v, CodeKindYAML); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

func TestYAMLPathLine(t *testing.T) {
	const doc = "kind: A\nlookups:\n- kind: B\n- kind: C\n  selector:\n    a: b\nspec:\n  ports:\n  - name: x\n  - port: integer\n" +
		"  hosts:\n    _: \"[]object\"\n    name: string\ndependsOn:\n  a.yaml: [b.yaml]\n"
	cases := map[string]int{
		"kind":                 1,
		"lookups[1].selector":  5,
		"lookups[].kind":       3,
		"lookups[1]":           4,
		"spec.ports[].port":    10,
		"spec.ports[0].name":   9,
		"spec.hosts[].name":    13,
		"spec.missing":         7, // the deepest field of the path the document has
		"lookups[2].selector":  2,
		"Kind":                 1, // as encoding/json matches keys
		"spec.ports[0].name.x": 9,
		"nothing.here":         0,
	}
	for path, want := range cases {
		if got := YAMLPathLine([]byte(doc), strings.Split(path, ".")...); got != want {
			t.Errorf("%s: line %d, want %d", path, got, want)
		}
	}
	if got := YAMLPathLine([]byte(doc), "dependsOn", "a.yaml"); got != 15 {
		t.Errorf("a key with a dot: line %d, want 15", got)
	}
	if got := YAMLPathLine([]byte("a: [b\n"), "a"); got != 0 {
		t.Errorf("a document that does not parse: line %d, want 0", got)
	}
}
