package schema

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// FuzzParse parses arbitrary kind.yaml spec sections. Parse must never
// panic, and what it accepts must be a schema the CRD can hold: the same on
// every parse, JSON-encodable, with every required field declared and every
// default valid JSON.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"size: integer | default=3 minimum=0 maximum=10\n",
		"ports:\n  - port: integer | required\n    protocol: string | enum=TCP,UDP default=TCP\n",
		"ports:\n  _: '[]object | listType=map listMapKeys=port'\n  port: integer | required\n",
		`a: 'string | pattern="^\d+$" description="x \"y\"" validation="self != ''''" message="m"'` + "\n",
		"m: 'map[string][]quantity | default={\"a\": [1, \"2Gi\"]}'\n",
		"_: object | description=x\nv: object\n",
		"a: '[][]intOrString | default=[[1, \"a\"]]'\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return
		}
		s, err := Parse("spec", m)
		if err != nil {
			var se *Error
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %v (%T) is not a *%T", err, err, se)
			}
			return
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("accepted a schema that does not encode: %v", err)
		}
		again, err := Parse("spec", m)
		if err != nil {
			t.Fatalf("second parse: %v", err)
		}
		if out2, _ := json.Marshal(again); !bytes.Equal(out, out2) {
			t.Fatalf("two parses differ:\n%s\n%s", out, out2)
		}
		walk(t, s)
	})
}

func walk(t *testing.T, s *apiextensionsv1.JSONSchemaProps) {
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			t.Fatalf("required %q is not a property", r)
		}
	}
	if !slices.IsSorted(s.Required) {
		t.Fatalf("required %v is not sorted", s.Required)
	}
	if s.Default != nil && !json.Valid(s.Default.Raw) {
		t.Fatalf("default %q is not JSON", s.Default.Raw)
	}
	for _, p := range s.Properties {
		walk(t, &p)
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(t, s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(t, s.AdditionalProperties.Schema)
	}
}
