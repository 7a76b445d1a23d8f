package examples_test

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// crd is the part of an apiextensions.k8s.io/v1 CustomResourceDefinition the
// tests read. The module does not depend on k8s.io/apiextensions-apiserver,
// and these few fields are all the checks need.
type crd struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind     string `json:"kind"`
			ListKind string `json:"listKind"`
			Plural   string `json:"plural"`
			Singular string `json:"singular"`
		} `json:"names"`
		Scope    string       `json:"scope"`
		Versions []crdVersion `json:"versions"`
	} `json:"spec"`
}

type crdVersion struct {
	Name         string `json:"name"`
	Served       bool   `json:"served"`
	Storage      bool   `json:"storage"`
	Subresources struct {
		Status *struct{} `json:"status"`
	} `json:"subresources"`
	AdditionalPrinterColumns []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		JSONPath string `json:"jsonPath"`
	} `json:"additionalPrinterColumns"`
	Schema struct {
		OpenAPIV3Schema *openAPISchema `json:"openAPIV3Schema"`
	} `json:"schema"`
}

// openAPISchema is the subset of a structural schema the examples use:
// enough to check that a sample or a rendered status has only known fields
// of the right types within their bounds. CEL rules are left to the API
// server (see the report of `kubectl apply --dry-run=server`).
type openAPISchema struct {
	Type                 string                    `json:"type"`
	Properties           map[string]*openAPISchema `json:"properties"`
	Items                *openAPISchema            `json:"items"`
	AdditionalProperties *openAPISchema            `json:"additionalProperties"`
	Required             []string                  `json:"required"`
	Minimum              *float64                  `json:"minimum"`
	Maximum              *float64                  `json:"maximum"`
	MinLength            *int                      `json:"minLength"`
	MaxLength            *int                      `json:"maxLength"`
	MinItems             *int                      `json:"minItems"`
	MaxItems             *int                      `json:"maxItems"`
	Pattern              string                    `json:"pattern"`
	Enum                 []any                     `json:"enum"`
	IntOrString          bool                      `json:"x-kubernetes-int-or-string"`
	PreserveUnknown      bool                      `json:"x-kubernetes-preserve-unknown-fields"`
	ListType             string                    `json:"x-kubernetes-list-type"`
	ListMapKeys          []string                  `json:"x-kubernetes-list-map-keys"`
}

func readCRD(t testing.TB, path string) *crd {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c crd
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &c
}

// version returns the CRD version named like gv's, or nil.
func (c *crd) version(name string) *crdVersion {
	for i := range c.Spec.Versions {
		if c.Spec.Versions[i].Name == name {
			return &c.Spec.Versions[i]
		}
	}
	return nil
}

// validate returns what is wrong with v under s, one message per problem,
// in a stable order.
func (s *openAPISchema) validate(path string, v any) []string {
	if s.IntOrString {
		switch v.(type) {
		case int64, string:
			return nil
		}
		return []string{fmt.Sprintf("%s: want an integer or a string, got %T", path, v)}
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			bad("want an object, got %T", v)
			break
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				bad("%s is required", r)
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch {
			case s.Properties[k] != nil:
				errs = append(errs, s.Properties[k].validate(path+"."+k, m[k])...)
			case s.AdditionalProperties != nil:
				errs = append(errs, s.AdditionalProperties.validate(path+"."+k, m[k])...)
			case !s.PreserveUnknown:
				bad("unknown field %q (the API server would drop it)", k)
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			bad("want an array, got %T", v)
			break
		}
		if s.MinItems != nil && len(a) < *s.MinItems {
			bad("want at least %d items, got %d", *s.MinItems, len(a))
		}
		if s.MaxItems != nil && len(a) > *s.MaxItems {
			bad("want at most %d items, got %d", *s.MaxItems, len(a))
		}
		if s.Items != nil {
			for i, it := range a {
				errs = append(errs, s.Items.validate(fmt.Sprintf("%s[%d]", path, i), it)...)
			}
		}
	case "integer", "number":
		var f float64
		switch n := v.(type) {
		case int64:
			f = float64(n)
		case float64:
			if s.Type == "integer" {
				bad("want an integer, got %v", n)
			}
			f = n
		default:
			bad("want a number, got %T", v)
		}
		if s.Minimum != nil && f < *s.Minimum {
			bad("%v is less than the minimum %v", f, *s.Minimum)
		}
		if s.Maximum != nil && f > *s.Maximum {
			bad("%v is more than the maximum %v", f, *s.Maximum)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("want a string, got %T", v)
			break
		}
		if s.MinLength != nil && len(str) < *s.MinLength {
			bad("want at least %d characters", *s.MinLength)
		}
		if s.MaxLength != nil && len(str) > *s.MaxLength {
			bad("want at most %d characters", *s.MaxLength)
		}
		if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(str) {
			bad("%q does not match %s", str, s.Pattern)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("want a boolean, got %T", v)
		}
	default:
		bad("schema type %q is not handled by this test", s.Type)
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return reflect.DeepEqual(e, v) }) {
		bad("%v is not one of %v", v, s.Enum)
	}
	return errs
}

// field returns the schema of a simple JSONPath such as .status.readyReplicas
// (filters and indexes are skipped: .status.conditions[?(...)].status is
// checked as .status.conditions.status, i.e. inside the items).
func (s *openAPISchema) field(jsonPath string) *openAPISchema {
	cur := s
	path := regexp.MustCompile(`\[[^]]*\]`).ReplaceAllString(jsonPath, "")
	for _, p := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		if cur.Type == "array" && cur.Items != nil {
			cur = cur.Items
		}
		if cur.Properties[p] == nil {
			return nil
		}
		cur = cur.Properties[p]
	}
	return cur
}

// TestCRDs checks each CRD against its folder's kind.yaml and the engine's
// contract, and its sample against its schema.
func TestCRDs(t *testing.T) {
	for _, ex := range loadExamples(t) {
		t.Run(ex.name, func(t *testing.T) {
			c := ex.crd
			gv, err := schema.ParseGroupVersion(ex.kind.APIVersion)
			if err != nil {
				t.Fatalf("kind.yaml apiVersion: %v", err)
			}
			if c.APIVersion != "apiextensions.k8s.io/v1" || c.Kind != "CustomResourceDefinition" {
				t.Errorf("crds/%s.yaml is a %s %s, want an apiextensions.k8s.io/v1 CustomResourceDefinition", ex.name, c.APIVersion, c.Kind)
			}
			if c.Spec.Group != gv.Group || c.Spec.Names.Kind != ex.kind.Kind {
				t.Errorf("CRD serves %s %s, kind.yaml names %s %s", c.Spec.Group, c.Spec.Names.Kind, gv.Group, ex.kind.Kind)
			}
			if want := c.Spec.Names.Plural + "." + c.Spec.Group; c.Metadata.Name != want {
				t.Errorf("CRD name %q, want %q", c.Metadata.Name, want)
			}
			if c.Spec.Scope != "Namespaced" {
				t.Errorf("scope %q: the examples are namespaced kinds", c.Spec.Scope)
			}
			if got, want := nestedString(ex.sample, "apiVersion")+" "+nestedString(ex.sample, "kind"), ex.kind.APIVersion+" "+ex.kind.Kind; got != want {
				t.Errorf("examples/%s.yaml is a %s, kind.yaml serves %s", ex.name, got, want)
			}

			v := c.version(gv.Version)
			if v == nil || !v.Served || !v.Storage {
				t.Fatalf("CRD has no served storage version %q", gv.Version)
			}
			if v.Subresources.Status == nil {
				t.Error("no status subresource: the engine writes status through it")
			}
			root := v.Schema.OpenAPIV3Schema
			if root == nil || root.Properties["spec"] == nil || root.Properties["status"] == nil {
				t.Fatal("the schema must describe spec and status")
			}
			checkEngineStatusSchema(t, root.Properties["status"])
			checkPrinterColumns(t, v, root)

			if errs := validateObject(root, ex.sample); len(errs) > 0 {
				t.Errorf("examples/%s.yaml does not match its CRD:\n%s", ex.name, strings.Join(errs, "\n"))
			}
		})
	}
}

// checkEngineStatusSchema checks what the engine writes on every kind:
// observedGeneration and conditions as metav1.Conditions keyed by type.
func checkEngineStatusSchema(t *testing.T, status *openAPISchema) {
	t.Helper()
	if len(status.Required) > 0 {
		// On a failed render the engine writes the conditions alone (with
		// the last good fields, which may not exist yet).
		t.Errorf("status requires %v: no status field may be required", status.Required)
	}
	if og := status.Properties["observedGeneration"]; og == nil || og.Type != "integer" {
		t.Error("status.observedGeneration (integer) is missing")
	}
	conds := status.Properties["conditions"]
	switch {
	case conds == nil || conds.Type != "array" || conds.Items == nil:
		t.Fatal("status.conditions (array) is missing")
	case conds.ListType != "map" || !slices.Equal(conds.ListMapKeys, []string{"type"}):
		t.Errorf("status.conditions: want x-kubernetes-list-type map keyed by [type], got %q %v", conds.ListType, conds.ListMapKeys)
	}
	for _, f := range []string{"type", "status", "lastTransitionTime", "reason", "message"} {
		if !slices.Contains(conds.Items.Required, f) || conds.Items.Properties[f] == nil {
			t.Errorf("status.conditions items: %s must be a required field, as in metav1.Condition", f)
		}
	}
}

// checkPrinterColumns checks that `kubectl get` shows the Reconciled
// condition and the age, and that every column reads a field of the schema
// (a column on a misspelt path is silently empty).
func checkPrinterColumns(t *testing.T, v *crdVersion, root *openAPISchema) {
	t.Helper()
	want := map[string]string{
		"Ready": `.status.conditions[?(@.type=="Ready")].status`,
		"Age":   ".metadata.creationTimestamp",
	}
	for _, col := range v.AdditionalPrinterColumns {
		if path, ok := want[col.Name]; ok {
			if col.JSONPath != path {
				t.Errorf("column %s reads %s, want %s", col.Name, col.JSONPath, path)
			}
			delete(want, col.Name)
		}
		if strings.HasPrefix(col.JSONPath, ".metadata.") {
			continue
		}
		f := root.field(col.JSONPath)
		switch {
		case f == nil:
			t.Errorf("column %s reads %s, which the schema does not have", col.Name, col.JSONPath)
		case col.Type == "integer" && f.Type != "integer":
			t.Errorf("column %s is an integer column on a %s field", col.Name, f.Type)
		}
	}
	for name := range want {
		t.Errorf("no %s printer column", name)
	}
}

// validateObject validates the parts of obj a CRD schema governs: spec and
// status. metadata is the API server's, and apiVersion and kind are checked
// against kind.yaml.
func validateObject(root *openAPISchema, obj map[string]any) []string {
	var errs []string
	for _, f := range []string{"spec", "status"} {
		if v, ok := obj[f]; ok {
			errs = append(errs, root.Properties[f].validate(f, v)...)
		}
	}
	return errs
}
