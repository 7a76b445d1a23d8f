package lint

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/crdinstall"
	"github.com/tmplop/operator/engine/status"
)

// crdFinding is a finding about the kind's CRD.
func crdFinding(c *CRD, code, format string, args ...any) Finding {
	return Finding{File: c.File, Line: c.Line, Severity: severityOf[code], Code: code, Message: fmt.Sprintf(format, args...)}
}

// crdVersion returns the CRD's version named v.
func crdVersion(c *apiextensionsv1.CustomResourceDefinition, v string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range c.Spec.Versions {
		if c.Spec.Versions[i].Name == v {
			return &c.Spec.Versions[i]
		}
	}
	return nil
}

func preserves(s *apiextensionsv1.JSONSchemaProps) bool {
	return s != nil && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// statusSchema returns the schema of .status in the CRD's version v (nil
// when it has none) and whether .status keeps unknown fields.
func statusSchema(v *apiextensionsv1.CustomResourceDefinitionVersion) (*apiextensionsv1.JSONSchemaProps, bool) {
	if v == nil || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return nil, true // no schema at all: nothing is pruned (apiextensions.k8s.io/v1 requires one)
	}
	root := v.Schema.OpenAPIV3Schema
	if s, ok := root.Properties["status"]; ok {
		return &s, preserves(&s)
	}
	return nil, preserves(root)
}

// checkCRD checks what the engine needs of the kind's CRD: the version
// kind.yaml watches, the status subresource, and a status schema that
// keeps the conditions and observedGeneration the engine writes.
func (f *folder) checkCRD(c *CRD) []Finding {
	k := f.kind
	v := crdVersion(c.Object, k.GVK.Version)
	if v == nil {
		var names []string
		for _, v := range c.Object.Spec.Versions {
			names = append(names, v.Name)
		}
		return []Finding{crdFinding(c, CodeNoVersion, "the CRD of %s has no version %s, which kind.yaml watches (it has %s)",
			k.GVK.GroupKind(), k.GVK.Version, strings.Join(names, ", "))}
	}
	var out []Finding
	if !v.Served {
		out = append(out, crdFinding(c, CodeNoVersion, "version %s of %s, which kind.yaml watches, is not served", v.Name, k.GVK.GroupKind()))
	}
	if v.Subresources == nil || v.Subresources.Status == nil {
		out = append(out, crdFinding(c, CodeNoSubresource,
			"version %s of %s has no status subresource (subresources: {status: {}}): the engine writes .status through it, so every status write fails",
			v.Name, k.GVK.GroupKind()))
	}
	s, keep := statusSchema(v)
	if s == nil && keep {
		return out
	}
	if s == nil {
		return append(out, crdFinding(c, CodeNoConditions,
			"version %s of %s has no status in its schema: the API server drops the conditions and observedGeneration the engine writes (and all of status.yaml)",
			v.Name, k.GVK.GroupKind()))
	}
	if !keep {
		if cond, ok := s.Properties["conditions"]; !ok || cond.Type != "array" {
			out = append(out, crdFinding(c, CodeNoConditions,
				"the status schema of %s %s has no conditions list: the API server drops the Reconciled condition the engine writes; add conditions (an array of metav1.Condition, as in crds/memcached.yaml)",
				k.GVK.GroupKind(), v.Name))
		} else {
			keys := cond.XListMapKeys
			if cond.XListType == nil || *cond.XListType != "map" || !slices.Equal(keys, []string{"type"}) {
				out = append(out, crdFinding(c, CodeConditionsList,
					"status.conditions of %s %s is not x-kubernetes-list-type: map with x-kubernetes-list-map-keys: [type]: server-side apply then replaces the list as a whole instead of merging conditions by type",
					k.GVK.GroupKind(), v.Name))
			}
		}
		if og, ok := s.Properties["observedGeneration"]; !ok || (og.Type != "integer" && og.Type != "") {
			out = append(out, crdFinding(c, CodeNoConditions,
				"the status schema of %s %s has no integer observedGeneration: the API server drops (or refuses) the observedGeneration the engine writes",
				k.GVK.GroupKind(), v.Name))
		}
	}
	if len(s.Required) > 0 {
		out = append(out, crdFinding(c, CodeRequiredStatus,
			"the status schema of %s %s requires %s: after a failed first render the engine writes the conditions alone, which the API server then refuses; make them optional",
			k.GVK.GroupKind(), v.Name, strings.Join(s.Required, ", ")))
	}
	return out
}

// engineStatus checks that status.yaml leaves the engine's fields alone.
func (f *folder) engineStatus(st map[string]any) []Finding {
	var out []Finding
	if _, ok := st["observedGeneration"]; ok {
		out = append(out, f.at(statusFile, keyLine(f.templates[statusFile], "observedGeneration"), CodeStatusEngine,
			"status.yaml renders observedGeneration: the engine writes it (the generation it reconciled); remove it"))
	}
	if _, ok := st[status.FieldObservedRevision]; ok {
		out = append(out, f.at(statusFile, keyLine(f.templates[statusFile], status.FieldObservedRevision), CodeStatusEngine,
			"status.yaml renders %s: the engine writes it (the revision of the folder it reconciled with, docs/rollout.md); remove it", status.FieldObservedRevision))
	}
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		if status.EngineOwned(typ) {
			out = append(out, f.at(statusFile, textLine(f.templates[statusFile], typ), CodeStatusEngine,
				"status.yaml renders the condition %s: the engine owns it and overwrites it; render conditions of other types only", typ))
		}
	}
	return out
}

// statusFields checks a rendered status against the CRD's status schema:
// fields the API server would drop (LNT300) and values of the wrong type,
// for which it refuses the whole status write (LNT301).
func (f *folder) statusFields(c *CRD, st map[string]any) []Finding {
	v := crdVersion(c.Object, f.kind.GVK.Version)
	s, keep := statusSchema(v)
	if v == nil || (s == nil && keep) {
		return nil
	}
	fix := "add it to the CRD (" + c.File + ")"
	if strings.HasSuffix(c.File, "/"+catalog.KindFile) {
		fix = "declare it under status: in " + c.File
	}
	var out []Finding
	report := func(code, key, format string, args ...any) {
		out = append(out, f.at(statusFile, keyLine(f.templates[statusFile], key), code, format, args...))
	}
	var check func(p, key string, val any, s *apiextensionsv1.JSONSchemaProps)
	check = func(p, key string, val any, s *apiextensionsv1.JSONSchemaProps) {
		if s == nil || val == nil {
			return // no schema to hold it to; null is pruned, not refused
		}
		if want := typeOf(s); want != "" {
			if got := jsonType(val); !typeMatches(want, got) {
				report(CodeStatusType, key, "%s is %s, but the CRD's status schema of %s %s says %s: the API server refuses the whole status write",
					p, article(got), f.kind.GVK.GroupKind(), v.Name, want)
				return
			}
		}
		switch val := val.(type) {
		case map[string]any:
			keys := make([]string, 0, len(val))
			for k := range val {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if prop, ok := s.Properties[k]; ok {
					check(p+"."+k, k, val[k], &prop)
					continue
				}
				if ap := s.AdditionalProperties; ap != nil && (ap.Schema != nil || ap.Allows) {
					check(p+"."+k, k, val[k], ap.Schema)
					continue
				}
				if preserves(s) || (s.XEmbeddedResource && (k == "apiVersion" || k == "kind" || k == "metadata")) {
					continue
				}
				report(CodeStatusDropped, k, "status.yaml renders %s.%s, which the CRD's status schema of %s %s does not have: the API server drops it; %s",
					p, k, f.kind.GVK.GroupKind(), v.Name, fix)
			}
		case []any:
			if s.Items != nil && s.Items.Schema != nil {
				for _, e := range val {
					check(p+"[]", key, e, s.Items.Schema)
				}
			}
		}
	}
	if s == nil {
		s = &apiextensionsv1.JSONSchemaProps{Type: "object"}
	}
	check("status", "", st, s)
	return out
}

func typeOf(s *apiextensionsv1.JSONSchemaProps) string {
	if s.XIntOrString {
		return "integer or string"
	}
	return s.Type
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, int:
		return "integer"
	case float64:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func typeMatches(want, got string) bool {
	switch want {
	case got:
		return true
	case "number":
		return got == "integer"
	case "integer or string":
		return got == "integer" || got == "string"
	}
	return false
}

func article(t string) string {
	switch t {
	case "object", "array", "integer":
		return "an " + t
	}
	return "a " + t
}

// noCRD is the finding for a custom kind without a CRD.
func (f *folder) noCRD(k *catalog.Kind) Finding {
	return f.at(catalog.KindFile, 0, CodeNoCRD,
		"no CRD of %s found (no crd.yaml or schema in the folder, none in --crds): the CRD and the rendered status are not checked", k.GVK.GroupKind())
}

// reservedGroup reports a folder's own CRD (crd.yaml, or a schema in
// kind.yaml) in a group that `run --install-crds` refuses to install
// (crdinstall.ReservedGroup): the groups of Kubernetes and of its SIG
// projects. The folder serves the kind all the same when the CRD is
// installed some other way.
func (f *folder) reservedGroup() []Finding {
	k := f.kind
	reason := crdinstall.ReservedGroup(k.GVK.Group)
	switch {
	case reason == "":
		return nil
	case k.CRD != nil:
		return []Finding{f.at(crdFile, keyLine(string(k.CRD), "group"), CodeReservedGroup,
			"the folder's CRD is in group %q: %s; run --install-crds refuses to install it: use a group of a domain of your own, or remove %s", k.GVK.Group, reason, crdFile)}
	case k.Spec.HasCRDSchema():
		return []Finding{f.at(catalog.KindFile, topKeyLine(f.kindYAML, "apiVersion"), CodeReservedGroup,
			"kind.yaml's schema makes a CRD in group %q: %s; run --install-crds refuses to install it: use a group of a domain of your own", k.GVK.Group, reason)}
	}
	return nil
}
