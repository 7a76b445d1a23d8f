package schema

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// SelfKey is the key of a mapping that holds the type line of the mapping
// itself: its markers (`_: "object | required description=..."`), or a type
// that makes the mapping the items of an array or the values of a map
// (`_: "[]object | minItems=1"`): the innermost object of that type has the
// mapping's other keys as its fields.
const SelfKey = "_"

// EngineStatusFields are the status fields the engine writes on every kind;
// the CRD always declares them (see engine/crd), so a short schema may not.
var EngineStatusFields = []string{"conditions", "observedGeneration", "observedRevision"}

// quantityPattern is the pattern Kubernetes' CRD generators give a
// resource.Quantity (an int-or-string): 500m, 1Gi, 2.5, 1e3.
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

// Error is a mistake in a short schema, at the path of the field it is in,
// e.g. `spec.ports[].port: unknown marker "minimun"`. Items of an array add
// `[]` to the path, values of a map `.*`.
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string { return e.Path + ": " + e.Msg }

// Keys is Path as the keys of kind.yaml that lead to the field, for the
// caller that locates it there (render.YAMLPathLine); field names hold no
// dots.
func (e *Error) Keys() []string { return strings.Split(e.Path, ".") }

func errorf(path, format string, args ...any) error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// field is one parsed field: its schema and whether its parent requires it.
type field struct {
	schema   apiextensionsv1.JSONSchemaProps
	required bool
}

// Parse turns the short schema of one root of the object (kind.yaml's spec
// or status; path is "spec" or "status" and prefixes every error) into its
// OpenAPI schema, an object. A nil or empty mapping is an object without
// fields. The mapping's `_` may hold the root's markers (description,
// validation...), but not `required`: the generated CRD never requires a
// root.
func Parse(path string, fields map[string]any) (*apiextensionsv1.JSONSchemaProps, error) {
	if fields == nil {
		fields = map[string]any{}
	}
	f, err := parseMapping(path, fields)
	if err != nil {
		return nil, err
	}
	switch {
	case f.schema.Type != "object" || f.schema.AdditionalProperties != nil:
		return nil, errorf(path, "the root is an object: its %s type must be object", SelfKey)
	case f.required:
		return nil, errorf(path, "the root cannot be required (require its fields instead)")
	}
	return &f.schema, nil
}

// ParseStatus is Parse("status", fields) with the rules of a status that the
// engine writes: the engine's own fields are not the schema's to declare,
// and no top-level field may be required, because the engine writes the
// conditions alone when status.yaml fails to render and the API server
// would refuse that write.
func ParseStatus(fields map[string]any) (*apiextensionsv1.JSONSchemaProps, error) {
	for _, name := range EngineStatusFields {
		if _, ok := fields[name]; ok {
			return nil, errorf("status."+name, "written by the engine on every kind, and always in the generated CRD: remove it from kind.yaml")
		}
	}
	s, err := Parse("status", fields)
	if err != nil {
		return nil, err
	}
	if len(s.Required) > 0 {
		return nil, errorf("status."+s.Required[0], "a top-level status field cannot be required: the engine writes the conditions alone when status.yaml fails, and the API server would refuse that write")
	}
	return s, nil
}

// parseValue parses the value of one field: a type line, a mapping of
// fields or a one-item list.
func parseValue(path string, v any) (*field, error) {
	switch v := v.(type) {
	case string:
		return parseLine(path, v, nil)
	case map[string]any:
		return parseMapping(path, v)
	case []any:
		return parseList(path, v)
	case nil:
		return nil, errorf(path, `no type: write a type line such as "string | required", nested fields, or a one-item list`)
	default:
		return nil, errorf(path, "want a type line (a string), nested fields (a mapping) or a one-item list, got %T %v", v, v)
	}
}

// parseMapping parses nested fields: an object, or with a `_` type line the
// items or values of the type it names.
func parseMapping(path string, m map[string]any) (*field, error) {
	line := ""
	self, hasSelf := m[SelfKey]
	if hasSelf {
		s, ok := self.(string)
		if !ok {
			return nil, errorf(path, `%s holds the type line of the mapping itself, e.g. "object | required" or "[]object | minItems=1"; got %T %v`, SelfKey, self, self)
		}
		line = s
	}
	typ, _, _ := strings.Cut(line, "|")
	typ = strings.TrimSpace(typ)
	if typ == "" {
		typ = "object"
	}
	// The fields belong to the innermost object of the type: their paths
	// go through its arrays and maps.
	inner := path
	for t := typ; ; {
		if rest, ok := strings.CutPrefix(t, "[]"); ok {
			inner, t = inner+"[]", rest
		} else if _, val, ok := strings.Cut(t, "]"); ok && strings.HasPrefix(t, "map[") {
			inner, t = inner+".*", val
		} else {
			break
		}
	}

	obj := apiextensionsv1.JSONSchemaProps{Type: "object"}
	names := make([]string, 0, len(m))
	for name := range m {
		if name != SelfKey {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.TrimSpace(name) == "" {
			return nil, errorf(inner, "a field has an empty name")
		}
		f, err := parseValue(inner+"."+name, m[name])
		if err != nil {
			return nil, err
		}
		if obj.Properties == nil {
			obj.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		}
		obj.Properties[name] = f.schema
		if f.required {
			obj.Required = append(obj.Required, name) // sorted: names are
		}
	}
	if !hasSelf {
		return &field{schema: obj}, nil
	}
	_, markers, _ := strings.Cut(line, "|")
	return parseLine(path, typ+"|"+markers, &obj)
}

// parseList parses a one-item list: an array whose items are that item.
func parseList(path string, l []any) (*field, error) {
	if len(l) != 1 {
		return nil, errorf(path, "a list gives the type of its items: want one item (a type line or a mapping of fields), got %d", len(l))
	}
	item, err := parseValue(path+"[]", l[0])
	if err != nil {
		return nil, err
	}
	if item.required {
		return nil, errorf(path+"[]", "the items of a list cannot be required (required is for fields; minItems bounds a list)")
	}
	items := item.schema
	return &field{schema: apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}}, nil
}

// parseLine parses a type line, "type | markers". obj is the object of a
// mapping's `_` line, which the type must end in; nil for a field's line.
func parseLine(path, line string, obj *apiextensionsv1.JSONSchemaProps) (*field, error) {
	typ, markers, _ := strings.Cut(line, "|")
	typ = strings.TrimSpace(typ)
	s, err := parseType(path, typ, obj)
	if err != nil {
		return nil, err
	}
	f := &field{schema: *s}
	if err := applyMarkers(path, f, markers); err != nil {
		return nil, err
	}
	return f, nil
}

// parseType parses a type: a scalar, object, intOrString, quantity, []T or
// map[string]T.
func parseType(path, t string, obj *apiextensionsv1.JSONSchemaProps) (*apiextensionsv1.JSONSchemaProps, error) {
	if rest, ok := strings.CutPrefix(t, "[]"); ok {
		items, err := parseType(path, rest, obj)
		if err != nil {
			return nil, err
		}
		return &apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}}, nil
	}
	if rest, ok := strings.CutPrefix(t, "map["); ok {
		key, val, ok := strings.Cut(rest, "]")
		if !ok {
			return nil, errorf(path, "type %q: a map is written map[string]T", t)
		}
		if key != "string" {
			return nil, errorf(path, "type %q: the keys of a map are strings in JSON: write map[string]%s", t, val)
		}
		values, err := parseType(path, val, obj)
		if err != nil {
			return nil, err
		}
		return &apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: values}}, nil
	}
	switch t {
	case "object":
		if obj != nil {
			return obj, nil
		}
		// A free-form object: its content is kept as written.
		return &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}, nil
	case "string", "integer", "number", "boolean", "intOrString", "quantity":
		if obj != nil {
			return nil, errorf(path, "the %s type of a mapping must end in object (the mapping's other keys are its fields), got %q", SelfKey, t)
		}
		switch t {
		case "intOrString":
			return intOrString(""), nil
		case "quantity":
			return intOrString(quantityPattern), nil
		}
		return &apiextensionsv1.JSONSchemaProps{Type: t}, nil
	case "":
		return nil, errorf(path, `no type before the "|": write e.g. "string | required"`)
	}
	if strings.ContainsAny(t, " \t") {
		return nil, errorf(path, "unknown type %q (markers follow a %q: %s | %s)", t, "|", strings.Fields(t)[0], strings.Join(strings.Fields(t)[1:], " "))
	}
	if hint, ok := typeHints[t]; ok {
		return nil, errorf(path, "unknown type %q: %s", t, hint)
	}
	return nil, errorf(path, "unknown type %q%s (types: %s, []T, map[string]T)", t, suggest(t, typeNames), strings.Join(typeNames, ", "))
}

// typeNames are the type names, for errors.
var typeNames = []string{"string", "integer", "number", "boolean", "object", "intOrString", "quantity"}

// typeHints answer the names other schema languages use.
var typeHints = map[string]string{
	"int":      "write integer",
	"int32":    "write integer | format=int32",
	"int64":    "write integer",
	"float":    "write number",
	"double":   "write number",
	"bool":     "write boolean",
	"str":      "write string",
	"any":      "write object (a free-form object keeps any content)",
	"map":      "write map[string]T",
	"array":    "write []T",
	"list":     "write []T",
	"dict":     "write map[string]T",
	"Quantity": "write quantity",
}

func intOrString(pattern string) *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{
		XIntOrString: true,
		AnyOf:        []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}},
		Pattern:      pattern,
	}
}

func ptr[T any](v T) *T { return &v }

// suggest returns ` (did you mean "x"?)` for the candidate closest to s, or
// "" when none is close.
func suggest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := distance(strings.ToLower(s), strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || best == s {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = slices.Min([]int{prev[j] + 1, cur[j-1] + 1, prev[j-1] + cost})
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
