package crd

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/render"
)

// ErrNoSchema is returned (wrapped) by ForKind for a folder whose kind.yaml
// has no short schema and which has no crd.yaml: its CRD is installed some
// other way.
var ErrNoSchema = errors.New("no CRD: kind.yaml has no spec, status, printerColumns or validation, and the folder no " + catalog.CRDFile)

// The printer columns every generated CRD ends with, unless the folder
// names columns so.
const (
	// ReadyColumn is the status of the Ready condition (docs/readiness.md):
	// what `kubectl get` users, `kubectl wait` and GitOps tools look at.
	ReadyColumn = "Ready"
	// ReasonColumn is its reason, with -o wide.
	ReasonColumn = "Reason"
	AgeColumn    = "Age"
)

// ForKind returns the kind's CRD: its crd.yaml, checked against kind.yaml,
// or the one generated from kind.yaml's short schema, or an error wrapping
// ErrNoSchema when it has neither. Its other errors are *render.Error
// about crd.yaml or kind.yaml, at the line of the field they are about
// when it is known (render.CodeInput: lint's LNT010).
func ForKind(k *catalog.Kind) (*apiextensionsv1.CustomResourceDefinition, error) {
	if k.CRD != nil {
		return fromFile(k)
	}
	if !k.Spec.HasCRDSchema() {
		return nil, fmt.Errorf("kind %s: %w", k.GVK.GroupKind(), ErrNoSchema)
	}
	c, err := generate(k)
	if err != nil {
		return nil, render.AtField(catalog.KindFile, k.Files[catalog.KindFile], render.CodeInput, err)
	}
	return c, nil
}

// fieldErr is err as a mistake of kind.yaml's field at path.
func fieldErr(err error, path ...string) error { return render.Field(err, path...) }

// SourceFile is the file of the folder the kind's CRD comes from: crd.yaml
// or kind.yaml.
func SourceFile(k *catalog.Kind) string {
	if k.CRD != nil {
		return catalog.CRDFile
	}
	return catalog.KindFile
}

// Names returns the resource names of a kind: plural (kind.yaml's, or the
// lower-case kind pluralised), singular, kind and list kind.
func Names(k *catalog.Kind) apiextensionsv1.CustomResourceDefinitionNames {
	singular := strings.ToLower(k.GVK.Kind)
	plural := k.Spec.Plural
	if plural == "" {
		plural = Pluralize(singular)
	}
	return apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: singular, Kind: k.GVK.Kind, ListKind: k.GVK.Kind + "List"}
}

// Pluralize returns the English plural of a lower-case singular noun by the
// regular rules: -s, -x, -z, -ch, -sh take -es, a consonant and -y -ies,
// anything else -s. An irregular noun needs kind.yaml's plural.
// (meta.UnsafeGuessKindToResource makes "gateway" "gatewaies".)
func Pluralize(singular string) string {
	switch {
	case singular == "":
		return ""
	case strings.HasSuffix(singular, "s"), strings.HasSuffix(singular, "x"), strings.HasSuffix(singular, "z"),
		strings.HasSuffix(singular, "ch"), strings.HasSuffix(singular, "sh"):
		return singular + "es"
	case strings.HasSuffix(singular, "y") && len(singular) > 1 && !strings.ContainsRune("aeiou", rune(singular[len(singular)-2])):
		return singular[:len(singular)-1] + "ies"
	}
	return singular + "s"
}

// generate builds the CRD from kind.yaml.
func generate(k *catalog.Kind) (*apiextensionsv1.CustomResourceDefinition, error) {
	gvk := k.GVK
	if k.BuiltIn() || !strings.Contains(gvk.Group, ".") {
		return nil, fieldErr(fmt.Errorf("apiVersion %s: a custom resource's group needs a dot and may not be a Kubernetes group", gvk.GroupVersion()), "apiVersion")
	}
	if errs := validation.IsDNS1035Label(gvk.Version); len(errs) > 0 {
		return nil, fieldErr(fmt.Errorf("apiVersion %s: version %q: %s", gvk.GroupVersion(), gvk.Version, strings.Join(errs, "; ")), "apiVersion")
	}
	names := Names(k)
	for _, n := range []string{names.Plural, names.Singular} {
		if errs := validation.IsDNS1035Label(n); len(errs) > 0 {
			return nil, fieldErr(fmt.Errorf("kind %s: resource name %q: %s", gvk.Kind, n, strings.Join(errs, "; ")), "kind")
		}
	}

	hubSpec, hubStatus, hubColumns := k.VersionSchemas(gvk.Version)
	status, err := statusSchema(k, hubStatus)
	if err != nil {
		return nil, err
	}
	root := rootSchema(hubSpec, status)
	if err := addValidation(root, k.Spec.Validation); err != nil {
		return nil, fieldErr(err, "validation")
	}
	columns, err := printerColumns(root, hubColumns)
	if err != nil {
		return nil, fieldErr(err, "printerColumns")
	}
	scope := apiextensionsv1.NamespaceScoped
	if k.Spec.Scope == string(apiextensionsv1.ClusterScoped) {
		scope = apiextensionsv1.ClusterScoped
	}
	var versions []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range k.Versions() {
		schema, cols := root, columns
		if !v.Hub {
			// Another version: its own short schema (spec free-form
			// without one, status the hub's), its own columns or the
			// hub's. kind.yaml's validation rules are the hub's: they
			// name the hub's fields.
			if schema, cols, err = versionSchema(k, v.Name, status, columns); err != nil {
				return nil, err
			}
		}
		cv := apiextensionsv1.CustomResourceDefinitionVersion{
			Name:                     v.Name,
			Served:                   v.Served,
			Storage:                  v.Storage,
			Deprecated:               v.Deprecated,
			Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema},
			Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			AdditionalPrinterColumns: cols,
		}
		if v.DeprecationWarning != "" {
			cv.DeprecationWarning = ptr(v.DeprecationWarning)
		}
		versions = append(versions, cv)
	}
	c := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: names.Plural + "." + gvk.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    gvk.Group,
			Names:    names,
			Scope:    scope,
			Versions: versions,
		},
	}
	if len(versions) > 1 {
		c.Spec.Conversion = webhookConversion()
	}
	return c, nil
}

// statusSchema completes a version's status schema (nil: an object
// without fields) with what the engine writes on every kind.
func statusSchema(k *catalog.Kind, status *apiextensionsv1.JSONSchemaProps) (*apiextensionsv1.JSONSchemaProps, error) {
	if status == nil {
		status = &apiextensionsv1.JSONSchemaProps{Type: "object"}
	}
	if status.Properties == nil {
		status.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	status.Properties["observedGeneration"] = observedGenerationSchema()
	status.Properties[catalog.FieldObservedRevision] = observedRevisionSchema()
	status.Properties["conditions"] = conditionsSchema()
	if err := addFormatStatus(k, status); err != nil {
		return nil, err
	}
	return status, nil
}

// rootSchema is the schema of an object of spec and status (spec nil:
// free-form).
func rootSchema(spec, status *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if spec == nil {
		spec = &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}
	}
	return &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   {Type: "object"},
			"spec":       *spec,
			"status":     *status,
		},
	}
}

// versionSchema is the schema and printer columns of version, not the
// hub, from kind.yaml's versions: hubStatus and hubColumns where it gives
// none.
func versionSchema(k *catalog.Kind, version string, hubStatus *apiextensionsv1.JSONSchemaProps, hubColumns []apiextensionsv1.CustomResourceColumnDefinition) (*apiextensionsv1.JSONSchemaProps, []apiextensionsv1.CustomResourceColumnDefinition, error) {
	at := fmt.Sprintf("versions[%d]", slices.IndexFunc(k.Spec.Versions, func(v catalog.VersionSpec) bool { return v.Name == version }))
	spec, status, cols := k.VersionSchemas(version)
	if status == nil {
		status = hubStatus.DeepCopy()
	} else {
		var err error
		if status, err = statusSchema(k, status); err != nil {
			return nil, nil, fieldErr(err, at, "status")
		}
	}
	root := rootSchema(spec, status)
	if cols == nil {
		return root, hubColumns, nil
	}
	columns, err := printerColumns(root, cols)
	if err != nil {
		return nil, nil, fieldErr(fmt.Errorf("%s.%w", at, err), at, "printerColumns")
	}
	return root, columns, nil
}

// metadataFields are the fields of metadata a CRD schema may declare, and a
// rule's fieldPath may name.
var metadataFields = []string{"name", "generateName"}

// fieldValueReasons are the reasons a validation rule may give.
var fieldValueReasons = []apiextensionsv1.FieldValueErrorReason{
	apiextensionsv1.FieldValueRequired, apiextensionsv1.FieldValueDuplicate,
	apiextensionsv1.FieldValueInvalid, apiextensionsv1.FieldValueForbidden,
}

// addValidation checks kind.yaml's validation rules and puts them on the
// root, where self is the whole object.
func addValidation(root *apiextensionsv1.JSONSchemaProps, rules []apiextensionsv1.ValidationRule) error {
	for i, r := range rules {
		at := fmt.Sprintf("validation[%d]", i)
		if strings.TrimSpace(r.Rule) == "" {
			return fmt.Errorf("%s: rule is empty", at)
		}
		if r.Reason != nil && !slices.Contains(fieldValueReasons, *r.Reason) {
			return fmt.Errorf("%s: reason %q: want one of %v", at, *r.Reason, fieldValueReasons)
		}
		if r.FieldPath == "" {
			continue
		}
		// The API server requires a fieldPath to name a field of the
		// schema; metadata's are declared when a rule names them.
		if name, ok := strings.CutPrefix(r.FieldPath, ".metadata."); ok && slices.Contains(metadataFields, name) {
			meta := root.Properties["metadata"]
			if meta.Properties == nil {
				meta.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
			}
			meta.Properties[name] = apiextensionsv1.JSONSchemaProps{Type: "string"}
			root.Properties["metadata"] = meta
			continue
		}
		if _, err := lookup(root, r.FieldPath); err != nil {
			return fmt.Errorf("%s: fieldPath %s: %v", at, r.FieldPath, err)
		}
	}
	root.XValidations = append(apiextensionsv1.ValidationRules(nil), rules...)
	return nil
}

// columnTypes are the types of a printer column.
var columnTypes = []string{"integer", "number", "string", "boolean", "date"}

// printerColumns checks kind.yaml's columns against the schema and appends
// the default ones.
func printerColumns(root *apiextensionsv1.JSONSchemaProps, cols []apiextensionsv1.CustomResourceColumnDefinition) ([]apiextensionsv1.CustomResourceColumnDefinition, error) {
	out := slices.Clone(cols)
	seen := map[string]bool{}
	for i, c := range cols {
		at := fmt.Sprintf("printerColumns[%d]", i)
		switch {
		case c.Name == "":
			return nil, fmt.Errorf("%s: name is empty", at)
		case seen[strings.ToLower(c.Name)]:
			return nil, fmt.Errorf("%s: column %s is given twice", at, c.Name)
		case !slices.Contains(columnTypes, c.Type):
			return nil, fmt.Errorf("%s (%s): type %q: want one of %v", at, c.Name, c.Type, columnTypes)
		case !strings.HasPrefix(c.JSONPath, "."):
			return nil, fmt.Errorf("%s (%s): jsonPath %q: want a path from the object, such as .spec.size", at, c.Name, c.JSONPath)
		case c.Priority < 0:
			return nil, fmt.Errorf("%s (%s): priority must not be negative", at, c.Name)
		}
		seen[strings.ToLower(c.Name)] = true
		if strings.HasPrefix(c.JSONPath, ".metadata.") {
			continue
		}
		// A column on a misspelt path is silently empty: check it.
		f, err := lookup(root, c.JSONPath)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): jsonPath %s: %v", at, c.Name, c.JSONPath, err)
		}
		if f != nil && !columnFits(c.Type, f) {
			return nil, fmt.Errorf("%s (%s): a %s column on a field of type %s", at, c.Name, c.Type, f.Type)
		}
	}
	for _, d := range []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: ReadyColumn, Type: "string", Description: "Status of the Ready condition: every child is applied and ready.",
			JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
		{Name: ReasonColumn, Type: "string", Priority: 1, Description: "Reason of the Ready condition.",
			JSONPath: `.status.conditions[?(@.type=="Ready")].reason`},
		{Name: AgeColumn, Type: "date", JSONPath: ".metadata.creationTimestamp"},
	} {
		if !seen[strings.ToLower(d.Name)] {
			out = append(out, d)
		}
	}
	return out, nil
}

// columnFits reports whether a column of type typ can show field f.
func columnFits(typ string, f *apiextensionsv1.JSONSchemaProps) bool {
	switch typ {
	case "integer":
		return f.Type == "integer"
	case "number":
		return f.Type == "integer" || f.Type == "number"
	case "boolean":
		return f.Type == "boolean"
	case "date":
		return f.Type == "string"
	}
	return true
}

var brackets = regexp.MustCompile(`\[[^]]*\]`)

// lookup returns the schema of the field a simple JSONPath such as
// .status.readyReplicas names; indexes and filters step into the items.
// It returns nil and no error when the path goes through a free-form
// object, where any field may be.
func lookup(root *apiextensionsv1.JSONSchemaProps, jsonPath string) (*apiextensionsv1.JSONSchemaProps, error) {
	cur := root
	for _, p := range strings.Split(strings.TrimPrefix(brackets.ReplaceAllString(jsonPath, ""), "."), ".") {
		for {
			if cur.Type == "array" && cur.Items != nil && cur.Items.Schema != nil {
				cur = cur.Items.Schema
				continue
			}
			break
		}
		switch next, ok := cur.Properties[p]; {
		case ok:
			cur = &next
		case cur.AdditionalProperties != nil && cur.AdditionalProperties.Schema != nil:
			cur = cur.AdditionalProperties.Schema
		case cur.XPreserveUnknownFields != nil && *cur.XPreserveUnknownFields:
			return nil, nil
		default:
			return nil, fmt.Errorf("%s is not a field of the schema", p)
		}
	}
	return cur, nil
}

// observedGenerationSchema is the schema of status.observedGeneration.
func observedGenerationSchema() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{
		Description: "The metadata.generation the operator last reconciled. Written by the operator on every reconcile, whatever status.yaml renders.",
		Type:        "integer", Format: "int64", Minimum: ptr(0.0),
	}
}

// observedRevisionSchema is the schema of status.observedRevision.
func observedRevisionSchema() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{
		Description: "The revision of the kind's folder the operator last reconciled the object with: the revision number of a " +
			"ControllerRevision in the operator's namespace (docs/rollout.md). Written by the operator on every reconcile.",
		Type: "integer", Format: "int64", Minimum: ptr(0.0),
	}
}

// conditionsSchema is the schema of status.conditions: []metav1.Condition,
// as kubebuilder generates it, keyed by type.
func conditionsSchema() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{
		Description: "Written by the operator. Reconciled is True when the children were rendered and applied and " +
			"the status rendered; False with reason RenderFailed, ApplyFailed or StatusFailed and a message naming " +
			"the template file and line otherwise.",
		Type:         "array",
		XListType:    ptr("map"),
		XListMapKeys: []string{"type"},
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			Description: "A metav1.Condition.",
			Type:        "object",
			Required:    []string{"lastTransitionTime", "message", "reason", "status", "type"},
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"type": {Type: "string", MaxLength: ptr[int64](316),
					Pattern: `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`},
				"status":             {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"True"`)}, {Raw: []byte(`"False"`)}, {Raw: []byte(`"Unknown"`)}}},
				"observedGeneration": {Type: "integer", Format: "int64", Minimum: ptr(0.0)},
				"lastTransitionTime": {Type: "string", Format: "date-time"},
				"reason": {Type: "string", MinLength: ptr[int64](1), MaxLength: ptr[int64](1024),
					Pattern: `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`},
				"message": {Type: "string", MaxLength: ptr[int64](32768)},
			},
		}},
	}
}

func ptr[T any](v T) *T { return &v }

// addFormatStatus declares in status what the engine writes for the
// kind's format (catalog.Kind.StatusSchema: a chart's status.chart and
// status.hooks), refusing a kind.yaml that declares it too.
func addFormatStatus(k *catalog.Kind, status *apiextensionsv1.JSONSchemaProps) error {
	fields := k.StatusSchema()
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if _, ok := status.Properties[name]; ok {
			return fieldErr(fmt.Errorf("status.%s: written by the engine on a %s kind, and always in the generated CRD: remove it from kind.yaml", name, k.FormatName()), "status", name)
		}
		status.Properties[name] = fields[name]
	}
	return nil
}
