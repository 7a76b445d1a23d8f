package lint

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

// breaking is one change between two versions' schemas that an object
// written at the older one does not survive at the newer one unconverted.
type breaking struct {
	path string // .spec.size
	what string // "removed", "type integer -> string", ...
}

// compatibility compares each version of the kind's CRD with the hub's
// schema and reports the breaking changes (compat): a field removed, a
// type changed, a new required field, an enum narrowed, a bound
// tightened, a pattern changed. Each is compared from the older version to
// the newer (Kubernetes' version priority: v1alpha1 < v1beta1 < v1 < v2),
// the way an API evolves; a field added as optional or an enum widened is
// compatible and not reported. Without a conversion (the CRD's None: the
// API server rewrites apiVersion alone) a breaking change loses or refuses
// stored objects: LNT105, an error. With the folder's conversion templates
// (or the CRD's own webhook) the conversion handles it: LNT106, info, and
// LNT104's round trips test it.
func (f *folder) compatibility(c *CRD) []Finding {
	k := f.kind
	if len(c.Object.Spec.Versions) < 2 {
		return nil
	}
	hub := crdVersion(c.Object, k.Hub())
	if hub == nil {
		return nil // LNT314 says so
	}
	converted := k.Converter() != nil
	if conv := c.Object.Spec.Conversion; conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter {
		converted = true
	}
	gk := k.GVK.GroupKind()
	var out []Finding
	for i := range c.Object.Spec.Versions {
		v := &c.Object.Spec.Versions[i]
		if v.Name == hub.Name {
			continue
		}
		older, newer := v, hub
		if version.CompareKubeAwareVersionStrings(v.Name, hub.Name) > 0 {
			older, newer = hub, v
		}
		for _, b := range schemaChanges(rootOf(older), rootOf(newer)) {
			file, line := f.versionLine(c, i, b.path)
			if converted {
				out = append(out, f.compatFinding(file, line, c, CodeConverted,
					"%s %s -> %s: %s %s: a breaking change, which the conversion templates handle", gk, older.Name, newer.Name, b.path, b.what))
				continue
			}
			out = append(out, f.compatFinding(file, line, c, CodeBreaking,
				"%s %s -> %s: %s %s: a breaking change, and the CRD converts with None (apiVersion rewritten alone): needs a conversion: %s and %s",
				gk, older.Name, newer.Name, b.path, b.what,
				layout.ConversionFile(v.Name, hub.Name), layout.ConversionFile(hub.Name, v.Name)))
		}
	}
	return out
}

// compatFinding is a finding at file:line of the folder, or of c when the
// CRD is not the folder's (a --crds file: file is empty).
func (f *folder) compatFinding(file string, line int, c *CRD, code, format string, args ...any) Finding {
	if file == "" {
		return crdFinding(c, code, format, args...)
	}
	return f.at(file, line, code, format, args...)
}

// versionLine locates the change at path of the CRD's version i in the
// folder's file: its entry of kind.yaml's versions (the field's line when
// the entry's short schema has it), or of crd.yaml's spec.versions. ""
// when the CRD is not the folder's.
func (f *folder) versionLine(c *CRD, i int, path string) (string, int) {
	k := f.kind
	name := c.Object.Spec.Versions[i].Name
	keys := strings.FieldsFunc(strings.ReplaceAll(path, "[]", ""), func(r rune) bool { return r == '.' })
	switch {
	case strings.HasSuffix(c.File, "/"+crdFile) && k.CRD != nil:
		doc, err := oneDocumentOf(k.CRD)
		if err != nil {
			return crdFile, 0
		}
		at := []string{"spec", fmt.Sprintf("versions[%d]", i), "schema", "openAPIV3Schema"}
		for _, key := range keys {
			at = append(at, "properties", key)
		}
		if n := render.YAMLPathLine(doc.Text, at...); n > 0 {
			return crdFile, doc.Line + n - 1
		}
		return crdFile, 0
	case strings.HasSuffix(c.File, "/"+catalog.KindFile):
		j := slices.IndexFunc(k.Spec.Versions, func(v catalog.VersionSpec) bool { return v.Name == name })
		if j < 0 {
			// The hub, not listed: the change is in the top-level schema.
			return catalog.KindFile, render.YAMLPathLine([]byte(f.kindYAML), keys...)
		}
		return catalog.KindFile, render.YAMLPathLine([]byte(f.kindYAML), append([]string{fmt.Sprintf("versions[%d]", j)}, keys...)...)
	}
	return "", 0
}

// oneDocumentOf is the first YAML document of data that is not blank.
func oneDocumentOf(data []byte) (render.Document, error) {
	for _, d := range render.SplitDocuments(data) {
		if !render.Blank(d.Text) {
			return d, nil
		}
	}
	return render.Document{}, fmt.Errorf("empty")
}

// rootOf is the version's schema, nil when it has none (everything kept).
func rootOf(v *apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.JSONSchemaProps {
	if v.Schema == nil {
		return nil
	}
	return v.Schema.OpenAPIV3Schema
}

// metaFields are the root's fields every version has and the API server
// owns: not compared.
var metaFields = map[string]bool{"apiVersion": true, "kind": true, "metadata": true}

// schemaChanges lists the breaking changes from old to new, in the
// order of the fields' paths. nil schemas keep everything.
func schemaChanges(old, new *apiextensionsv1.JSONSchemaProps) []breaking {
	var out []breaking
	compareSchemas("", old, new, &out)
	return out
}

// compareSchemas adds to out the breaking changes at path from old to
// new.
func compareSchemas(path string, old, new *apiextensionsv1.JSONSchemaProps, out *[]breaking) {
	if new == nil {
		return // nothing declared: anything is kept
	}
	add := func(format string, args ...any) {
		p := path
		if p == "" {
			p = "."
		}
		*out = append(*out, breaking{path: p, what: fmt.Sprintf(format, args...)})
	}
	if old == nil {
		old = &apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptrTo(true)}
	}
	if t := typeChange(old, new); t != "" {
		add("%s", t)
		return // what is below no longer compares
	}
	if d := enumNarrowed(old.Enum, new.Enum); d != "" {
		add("%s", d)
	}
	if old.Pattern != new.Pattern && new.Pattern != "" {
		add("pattern %q -> %q", old.Pattern, new.Pattern)
	}
	for _, b := range []struct {
		name     string
		old, new *float64
		lower    bool // a lower new bound is tighter
	}{
		{"maximum", old.Maximum, new.Maximum, true},
		{"minimum", old.Minimum, new.Minimum, false},
		{"maxLength", intBound(old.MaxLength), intBound(new.MaxLength), true},
		{"minLength", intBound(old.MinLength), intBound(new.MinLength), false},
		{"maxItems", intBound(old.MaxItems), intBound(new.MaxItems), true},
		{"minItems", intBound(old.MinItems), intBound(new.MinItems), false},
		{"maxProperties", intBound(old.MaxProperties), intBound(new.MaxProperties), true},
		{"minProperties", intBound(old.MinProperties), intBound(new.MinProperties), false},
	} {
		switch {
		case b.new == nil:
		case b.old == nil:
			add("%s %v added", b.name, *b.new)
		case b.lower && *b.new < *b.old, !b.lower && *b.new > *b.old:
			add("%s %v -> %v", b.name, *b.old, *b.new)
		}
	}
	for _, r := range new.Required {
		if !slices.Contains(old.Required, r) {
			*out = append(*out, breaking{path: path + "." + r, what: "newly required"})
		}
	}

	keepsUnknown := preserves(new) || new.AdditionalProperties != nil && (new.AdditionalProperties.Allows || new.AdditionalProperties.Schema != nil)
	if len(new.Properties) > 0 && len(old.Properties) == 0 && preserves(old) && !keepsUnknown {
		add("keeps unknown fields at the older version, only %s at the newer", strings.Join(sortedKeys(new.Properties), ", "))
	}
	for _, name := range sortedKeys(old.Properties) {
		if path == "" && metaFields[name] {
			continue
		}
		p := path + "." + name
		o := old.Properties[name]
		n, ok := new.Properties[name]
		if !ok {
			if !keepsUnknown {
				*out = append(*out, breaking{path: p, what: "removed"})
			}
			continue
		}
		compareSchemas(p, &o, &n, out)
	}
	if old.Items != nil && old.Items.Schema != nil && new.Items != nil && new.Items.Schema != nil {
		compareSchemas(path+"[]", old.Items.Schema, new.Items.Schema, out)
	}
	if old.AdditionalProperties != nil && old.AdditionalProperties.Schema != nil && new.AdditionalProperties != nil && new.AdditionalProperties.Schema != nil {
		compareSchemas(path+".*", old.AdditionalProperties.Schema, new.AdditionalProperties.Schema, out)
	}
}

// typeChange describes a change of type from old to new that an old value
// does not survive, "" when there is none. An integer that becomes a
// number, or a field that becomes an int-or-string, is compatible.
func typeChange(old, new *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case new.XIntOrString:
		return ""
	case old.XIntOrString:
		if new.Type != "" {
			return "type int-or-string -> " + new.Type
		}
		return ""
	case old.Type == new.Type, new.Type == "":
		return ""
	case old.Type == "integer" && new.Type == "number":
		return ""
	case old.Type == "":
		return "type any -> " + new.Type
	}
	return "type " + old.Type + " -> " + new.Type
}

// enumNarrowed describes the values of old that new's enum refuses, ""
// when it takes them all.
func enumNarrowed(old, new []apiextensionsv1.JSON) string {
	if len(new) == 0 {
		return ""
	}
	if len(old) == 0 {
		return "enum added: " + enumText(new)
	}
	in := map[string]bool{}
	for _, v := range new {
		in[string(compactJSON(v.Raw))] = true
	}
	var gone []apiextensionsv1.JSON
	for _, v := range old {
		if !in[string(compactJSON(v.Raw))] {
			gone = append(gone, v)
		}
	}
	if len(gone) == 0 {
		return ""
	}
	return "enum narrowed: " + enumText(gone) + " removed"
}

func enumText(vs []apiextensionsv1.JSON) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(compactJSON(v.Raw))
	}
	return strings.Join(s, ", ")
}

// compactJSON is raw without insignificant space, so that "a" and "a"
// written differently compare equal.
func compactJSON(raw []byte) []byte {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

func intBound(v *int64) *float64 {
	if v == nil {
		return nil
	}
	f := float64(*v)
	return &f
}

func ptrTo[T any](v T) *T { return &v }

func sortedKeys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
