package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The kinds of schema a marker may apply to, as errors name them.
const (
	kString      = "string"
	kInteger     = "integer"
	kNumber      = "number"
	kBoolean     = "boolean"
	kArray       = "array"
	kMap         = "map"
	kObject      = "object"
	kIntOrString = "intOrString"
	kQuantity    = "quantity"
)

// markerSpec says what a marker applies to and whether it is a flag (a
// marker that needs no value: `required` is `required=true`).
type markerSpec struct {
	kinds []string // nil: every kind
	flag  bool
}

var (
	numeric  = []string{kInteger, kNumber}
	scalars  = []string{kString, kInteger, kNumber, kBoolean, kIntOrString}
	objects  = []string{kMap, kObject}
	patterns = []string{kString, kIntOrString}
)

var markerSpecs = map[string]markerSpec{
	"required":         {flag: true},
	"immutable":        {flag: true},
	"nullable":         {flag: true},
	"default":          {},
	"description":      {},
	"validation":       {},
	"message":          {},
	"enum":             {kinds: scalars},
	"format":           {kinds: []string{kString, kInteger, kNumber}},
	"pattern":          {kinds: patterns},
	"minLength":        {kinds: []string{kString}},
	"maxLength":        {kinds: []string{kString}},
	"minimum":          {kinds: numeric},
	"maximum":          {kinds: numeric},
	"exclusiveMinimum": {kinds: numeric, flag: true},
	"exclusiveMaximum": {kinds: numeric, flag: true},
	"multipleOf":       {kinds: numeric},
	"minItems":         {kinds: []string{kArray}},
	"maxItems":         {kinds: []string{kArray}},
	"listType":         {kinds: []string{kArray}},
	"listMapKeys":      {kinds: []string{kArray}},
	"minProperties":    {kinds: objects},
	"maxProperties":    {kinds: objects},
	"mapType":          {kinds: objects},
}

var markerNames = func() []string {
	names := make([]string, 0, len(markerSpecs))
	for n := range markerSpecs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}()

// formats are the formats the API server knows, by kind. Others are
// accepted by it with a warning and checked by nothing, so here a typo is
// an error.
var formats = map[string][]string{
	kString: {"bsonobjectid", "byte", "cidr", "creditcard", "date", "date-time", "datetime", "duration", "email",
		"hexcolor", "hostname", "ipv4", "ipv6", "isbn", "isbn10", "isbn13", "k8s-long-name", "k8s-short-name", "mac",
		"password", "rgbcolor", "ssn", "uri", "uuid", "uuid3", "uuid4", "uuid5"},
	kInteger: {"int32", "int64"},
	kNumber:  {"double", "float"},
}

// kindOf names the kind of s for the markers' checks.
func kindOf(s *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString && s.Pattern == quantityPattern:
		return kQuantity
	case s.XIntOrString:
		return kIntOrString
	case s.Type == "object" && s.AdditionalProperties != nil:
		return kMap
	}
	return s.Type
}

// applyMarkers applies the markers text to f, then checks them together
// (bounds in order, list keys, the default against everything else).
func applyMarkers(path string, f *field, text string) error {
	toks, err := tokenize(text)
	if err != nil {
		return errorf(path, "%v", err)
	}
	s := &f.schema
	kind := kindOf(s)
	seen := map[string]bool{}
	lastRule, ruleHasMessage := -1, false
	var def *token
	for i := range toks {
		t := &toks[i]
		spec, ok := markerSpecs[t.key]
		if !ok {
			return errorf(path, "unknown marker %q%s", t.key, suggest(t.key, markerNames))
		}
		if seen[t.key] && t.key != "validation" && t.key != "message" {
			return errorf(path, "marker %s is given twice", t.key)
		}
		seen[t.key] = true
		if spec.kinds != nil && !slices.Contains(spec.kinds, kind) {
			return errorf(path, "marker %s applies to %s, not to %s", t.key, strings.Join(spec.kinds, ", "), kind)
		}
		var on bool
		if spec.flag {
			if on, err = flagValue(t); err != nil {
				return errorf(path, "%v", err)
			}
		} else if !t.hasValue {
			return errorf(path, "marker %s needs a value: %s=...", t.key, t.key)
		}
		if err := applyMarker(s, f, t, on, kind); err != nil {
			return errorf(path, "%s: %v", t.key, err)
		}
		switch t.key {
		case "validation":
			lastRule, ruleHasMessage = len(s.XValidations)-1, false
		case "message":
			if lastRule < 0 || ruleHasMessage {
				return errorf(path, "message= follows the validation= whose message it is")
			}
			s.XValidations[lastRule].Message = t.value
			ruleHasMessage = true
		case "default":
			def = t
		}
	}
	if err := checkMarkers(s, kind); err != nil {
		return errorf(path, "%v", err)
	}
	if def != nil {
		v, err := defaultValue(def, s, kind)
		if err != nil {
			return errorf(path, "default=%s: %v", def.value, err)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return errorf(path, "default=%s: %v", def.value, err)
		}
		s.Default = &apiextensionsv1.JSON{Raw: raw}
	}
	return nil
}

// flagValue reads a flag: no value, true or false.
func flagValue(t *token) (bool, error) {
	if !t.hasValue {
		return true, nil
	}
	switch t.value {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("marker %s is a flag: write %s, or %s=true or %s=false, not %s=%s", t.key, t.key, t.key, t.key, t.key, t.value)
}

// applyMarker applies one marker (default and message are applied by the
// caller).
func applyMarker(s *apiextensionsv1.JSONSchemaProps, f *field, t *token, on bool, kind string) error {
	var err error
	switch t.key {
	case "required":
		f.required = on
	case "immutable":
		if on {
			// A transition rule: it runs on updates that keep the field,
			// so the value can be set once but never changed.
			s.XValidations = append(s.XValidations, apiextensionsv1.ValidationRule{Rule: "self == oldSelf", Message: "field is immutable"})
		}
	case "nullable":
		s.Nullable = on
	case "exclusiveMinimum":
		s.ExclusiveMinimum = on
	case "exclusiveMaximum":
		s.ExclusiveMaximum = on
	case "description":
		s.Description = t.value
	case "validation":
		if strings.TrimSpace(t.value) == "" {
			return fmt.Errorf("empty CEL rule")
		}
		s.XValidations = append(s.XValidations, apiextensionsv1.ValidationRule{Rule: t.value})
	case "format":
		if !slices.Contains(formats[kind], t.value) {
			return fmt.Errorf("unknown %s format %q%s (formats: %s)", kind, t.value, suggest(t.value, formats[kind]), strings.Join(formats[kind], ", "))
		}
		s.Format = t.value
	case "pattern":
		if _, err := regexp.Compile(t.value); err != nil {
			return err
		}
		s.Pattern = t.value
	case "minimum":
		s.Minimum, err = number(t.value)
	case "maximum":
		s.Maximum, err = number(t.value)
	case "multipleOf":
		s.MultipleOf, err = number(t.value)
		if err == nil && *s.MultipleOf <= 0 {
			err = fmt.Errorf("must be more than 0")
		}
	case "minLength":
		s.MinLength, err = count(t.value)
	case "maxLength":
		s.MaxLength, err = count(t.value)
	case "minItems":
		s.MinItems, err = count(t.value)
	case "maxItems":
		s.MaxItems, err = count(t.value)
	case "minProperties":
		s.MinProperties, err = count(t.value)
	case "maxProperties":
		s.MaxProperties, err = count(t.value)
	case "enum":
		s.Enum, err = enumValues(t.value, kind)
	case "listType":
		if !slices.Contains([]string{"atomic", "set", "map"}, t.value) {
			return fmt.Errorf("%q: want atomic, set or map", t.value)
		}
		s.XListType = ptr(t.value)
	case "listMapKeys":
		for k := range strings.SplitSeq(t.value, ",") {
			if k = strings.TrimSpace(k); k == "" {
				return fmt.Errorf("%q: an empty key", t.value)
			}
			s.XListMapKeys = append(s.XListMapKeys, k)
		}
	case "mapType":
		if t.value != "atomic" && t.value != "granular" {
			return fmt.Errorf("%q: want atomic or granular", t.value)
		}
		s.XMapType = ptr(t.value)
	}
	return err
}

// number reads a bound.
func number(v string) (*float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("%q is not a number", v)
	}
	return &f, nil
}

// count reads a length or a number of items.
func count(v string) (*int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%q is not a non-negative integer", v)
	}
	return &n, nil
}

// enumValues reads enum=a,b,c as values of the field's kind.
func enumValues(v, kind string) ([]apiextensionsv1.JSON, error) {
	var out []apiextensionsv1.JSON
	seen := map[string]bool{}
	for e := range strings.SplitSeq(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			return nil, fmt.Errorf("%q: an empty value", v)
		}
		val, err := scalar(e, false, kind)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(val)
		if err != nil {
			return nil, err
		}
		if seen[string(raw)] {
			return nil, fmt.Errorf("%s is given twice", e)
		}
		seen[string(raw)] = true
		out = append(out, apiextensionsv1.JSON{Raw: raw})
	}
	return out, nil
}

// scalar reads v as a value of a scalar kind. quoted values of an
// intOrString are strings.
func scalar(v string, quoted bool, kind string) (any, error) {
	switch kind {
	case kString:
		return v, nil
	case kInteger:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", v)
		}
		return n, nil
	case kNumber:
		f, err := number(v)
		if err != nil {
			return nil, err
		}
		return *f, nil
	case kBoolean:
		switch v {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not true or false", v)
	case kIntOrString, kQuantity:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && !quoted {
			return n, nil
		}
		return v, nil
	}
	return nil, fmt.Errorf("a %s has no scalar values", kind)
}

// checkMarkers checks the markers of s together.
func checkMarkers(s *apiextensionsv1.JSONSchemaProps, kind string) error {
	switch {
	case s.ExclusiveMinimum && s.Minimum == nil:
		return fmt.Errorf("exclusiveMinimum needs a minimum")
	case s.ExclusiveMaximum && s.Maximum == nil:
		return fmt.Errorf("exclusiveMaximum needs a maximum")
	case s.Minimum != nil && s.Maximum != nil && *s.Minimum > *s.Maximum:
		return fmt.Errorf("minimum %v is more than maximum %v", *s.Minimum, *s.Maximum)
	case s.MinLength != nil && s.MaxLength != nil && *s.MinLength > *s.MaxLength:
		return fmt.Errorf("minLength %d is more than maxLength %d", *s.MinLength, *s.MaxLength)
	case s.MinItems != nil && s.MaxItems != nil && *s.MinItems > *s.MaxItems:
		return fmt.Errorf("minItems %d is more than maxItems %d", *s.MinItems, *s.MaxItems)
	case s.MinProperties != nil && s.MaxProperties != nil && *s.MinProperties > *s.MaxProperties:
		return fmt.Errorf("minProperties %d is more than maxProperties %d", *s.MinProperties, *s.MaxProperties)
	}
	for _, e := range s.Enum {
		var v any
		if err := json.Unmarshal(e.Raw, &v); err != nil {
			return err
		}
		if err := check(normalize(v), s, true); err != nil {
			return fmt.Errorf("enum value %s: %v", e.Raw, err)
		}
	}
	if kind != kArray {
		return nil
	}
	items := s.Items.Schema
	listType := ""
	if s.XListType != nil {
		listType = *s.XListType
	}
	switch {
	case len(s.XListMapKeys) > 0 && listType != "map":
		return fmt.Errorf("listMapKeys needs listType=map")
	case listType == "map" && len(s.XListMapKeys) == 0:
		return fmt.Errorf("listType=map needs listMapKeys, the item fields that identify an item")
	case listType == "map" && (kindOf(items) != kObject || items.Properties == nil):
		return fmt.Errorf("listType=map needs items that are objects with fields")
	case listType == "set" && !slices.Contains([]string{kString, kInteger, kNumber, kBoolean}, kindOf(items)):
		return fmt.Errorf("listType=set needs items that are strings, numbers or booleans")
	}
	for _, key := range s.XListMapKeys {
		p, ok := items.Properties[key]
		switch {
		case !ok:
			return fmt.Errorf("listMapKeys: %s is not a field of the items", key)
		case !slices.Contains([]string{kString, kInteger, kNumber, kBoolean}, kindOf(&p)):
			return fmt.Errorf("listMapKeys: %s must be a string, a number or a boolean", key)
		case p.Default == nil && !slices.Contains(items.Required, key):
			// The API server's rule: every item must have its keys.
			return fmt.Errorf("listMapKeys: %s must be required or have a default in the items", key)
		}
	}
	return nil
}

// defaultValue reads default=... as a value of the field's kind, and checks
// it against the field's schema, as the API server will.
func defaultValue(t *token, s *apiextensionsv1.JSONSchemaProps, kind string) (any, error) {
	var v any
	switch kind {
	case kArray, kMap, kObject:
		d := json.NewDecoder(bytes.NewReader([]byte(t.value)))
		d.UseNumber()
		if err := d.Decode(&v); err != nil || d.More() {
			return nil, fmt.Errorf("want JSON, e.g. [] or {}")
		}
		v = normalize(v)
	default:
		var err error
		if v, err = scalar(t.value, t.quoted, kind); err != nil {
			return nil, err
		}
	}
	if err := check(v, s, false); err != nil {
		return nil, err
	}
	return v, nil
}

// normalize turns the JSON numbers of v into int64 when they are integers
// and float64 otherwise, as check expects.
func normalize(v any) any {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v)
		}
		return v
	case []any:
		for i := range v {
			v[i] = normalize(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = normalize(v[k])
		}
	}
	return v
}

// check validates v against s: the checks of an OpenAPI schema that a
// default or an enum value can fail (CEL rules are left to the API server).
// skipEnum is set when v is one of s's enum values.
func check(v any, s *apiextensionsv1.JSONSchemaProps, skipEnum bool) error {
	if !skipEnum && len(s.Enum) > 0 {
		raw, _ := json.Marshal(v)
		if !slices.ContainsFunc(s.Enum, func(e apiextensionsv1.JSON) bool { return bytes.Equal(e.Raw, raw) }) {
			return fmt.Errorf("%s is not one of the enum values", raw)
		}
	}
	switch kind := kindOf(s); kind {
	case kIntOrString, kQuantity:
		return checkIntOrString(v, s)
	case kString:
		return checkString(v, s)
	case kInteger, kNumber:
		return checkNumber(v, s, kind)
	case kBoolean:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("want true or false, got %v", v)
		}
	case kArray:
		return checkArray(v, s)
	case kMap, kObject:
		return checkObject(v, s)
	}
	return nil
}

func checkIntOrString(v any, s *apiextensionsv1.JSONSchemaProps) error {
	switch v := v.(type) {
	case int64:
		return nil
	case string:
		if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(v) {
			return fmt.Errorf("%q does not match the pattern %s", v, s.Pattern)
		}
		return nil
	}
	return fmt.Errorf("want an integer or a string, got %v", v)
}

func checkString(v any, s *apiextensionsv1.JSONSchemaProps) error {
	str, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a string, got %v", v)
	}
	n := int64(len([]rune(str)))
	switch {
	case s.MinLength != nil && n < *s.MinLength:
		return fmt.Errorf("%q is shorter than minLength %d", str, *s.MinLength)
	case s.MaxLength != nil && n > *s.MaxLength:
		return fmt.Errorf("%q is longer than maxLength %d", str, *s.MaxLength)
	case s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(str):
		return fmt.Errorf("%q does not match the pattern %s", str, s.Pattern)
	}
	return nil
}

func checkNumber(v any, s *apiextensionsv1.JSONSchemaProps, kind string) error {
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		if kind == kInteger {
			return fmt.Errorf("want an integer, got %v", n)
		}
		f = n
	default:
		return fmt.Errorf("want %s, got %v", map[string]string{kInteger: "an integer", kNumber: "a number"}[kind], v)
	}
	switch {
	case s.Minimum != nil && (f < *s.Minimum || s.ExclusiveMinimum && f == *s.Minimum):
		return fmt.Errorf("%v is below the minimum %v", f, *s.Minimum)
	case s.Maximum != nil && (f > *s.Maximum || s.ExclusiveMaximum && f == *s.Maximum):
		return fmt.Errorf("%v is above the maximum %v", f, *s.Maximum)
	case s.MultipleOf != nil && math.Mod(f, *s.MultipleOf) != 0:
		return fmt.Errorf("%v is not a multiple of %v", f, *s.MultipleOf)
	}
	return nil
}

func checkArray(v any, s *apiextensionsv1.JSONSchemaProps) error {
	a, ok := v.([]any)
	if !ok {
		return fmt.Errorf("want a list, got %v", v)
	}
	switch n := int64(len(a)); {
	case s.MinItems != nil && n < *s.MinItems:
		return fmt.Errorf("%d items, fewer than minItems %d", n, *s.MinItems)
	case s.MaxItems != nil && n > *s.MaxItems:
		return fmt.Errorf("%d items, more than maxItems %d", n, *s.MaxItems)
	}
	for i, it := range a {
		if err := check(it, s.Items.Schema, false); err != nil {
			return fmt.Errorf("item %d: %v", i, err)
		}
	}
	return nil
}

func checkObject(v any, s *apiextensionsv1.JSONSchemaProps) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("want an object, got %v", v)
	}
	switch n := int64(len(m)); {
	case s.MinProperties != nil && n < *s.MinProperties:
		return fmt.Errorf("%d fields, fewer than minProperties %d", n, *s.MinProperties)
	case s.MaxProperties != nil && n > *s.MaxProperties:
		return fmt.Errorf("%d fields, more than maxProperties %d", n, *s.MaxProperties)
	}
	for _, r := range s.Required {
		if _, ok := m[r]; !ok {
			return fmt.Errorf("%s is required", r)
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var sub *apiextensionsv1.JSONSchemaProps
		if p, ok := s.Properties[k]; ok {
			sub = &p
		} else if s.AdditionalProperties != nil {
			sub = s.AdditionalProperties.Schema
		} else if s.XPreserveUnknownFields == nil || !*s.XPreserveUnknownFields {
			return fmt.Errorf("%s is not a field (the API server would drop it)", k)
		}
		if sub != nil {
			if err := check(m[k], sub, false); err != nil {
				return fmt.Errorf("%s: %v", k, err)
			}
		}
	}
	return nil
}
