// check.go holds the pure comparisons of a live CRD and the folder's: what a
// change would break in the stored objects.

package crdinstall

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// RefusedError is a CRD change refused because it would break stored
// objects; the live CRD is left as it is.
type RefusedError struct {
	// CRD is the CRD's name.
	CRD string
	// Reason says what the change would break.
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("CRD %s change refused, the live CRD is kept: %s", e.CRD, e.Reason)
}

// DroppedVersions returns the versions of live, in its order, that next no
// longer lists although live serves them or has stored objects in them
// (status.storedVersions): clients of a served version would break, and
// stored objects would become unreadable.
func DroppedVersions(live, next *apiextensionsv1.CustomResourceDefinition) []string {
	listed := map[string]bool{}
	for _, v := range next.Spec.Versions {
		listed[v.Name] = true
	}
	var out []string
	add := func(name string) {
		if !listed[name] && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, v := range live.Spec.Versions {
		if v.Served {
			add(v.Name)
		}
	}
	for _, v := range live.Status.StoredVersions {
		add(v)
	}
	return out
}

// node is a place in a schema: s is its schema, or all is set where
// everything is kept (an unknown field under
// x-kubernetes-preserve-unknown-fields, or a version without a schema). The
// zero node keeps nothing: the API server prunes what is there.
type node struct {
	s   *apiextensionsv1.JSONSchemaProps
	all bool
}

func root(s *apiextensionsv1.JSONSchemaProps) node {
	if s == nil {
		return node{all: true}
	}
	return node{s: s}
}

func (n node) keeps() bool { return n.all || n.s != nil }

func preserves(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// prop is the node of field name of an object at n.
func (n node) prop(name string) node {
	if n.all || n.s == nil {
		return n
	}
	if p, ok := n.s.Properties[name]; ok {
		return node{s: &p}
	}
	return n.other(name)
}

// other is the node of a field that n does not declare.
func (n node) other(name string) node {
	if n.all || n.s == nil {
		return n
	}
	if ap := n.s.AdditionalProperties; ap != nil {
		if ap.Schema != nil {
			return node{s: ap.Schema}
		}
		if ap.Allows {
			return node{all: true}
		}
	}
	if preserves(n.s) {
		return node{all: true}
	}
	if n.s.XEmbeddedResource && (name == "apiVersion" || name == "kind" || name == "metadata") {
		return node{all: true}
	}
	return node{}
}

// items is the node of the items of an array at n.
func (n node) items() node {
	if n.all || n.s == nil {
		return n
	}
	if it := n.s.Items; it != nil && it.Schema != nil {
		return node{s: it.Schema}
	}
	if preserves(n.s) {
		return node{all: true}
	}
	return node{}
}

func (n node) isObject() bool {
	return n.s != nil && (n.s.Type == "object" || len(n.s.Properties) > 0 || n.s.AdditionalProperties != nil)
}

func (n node) isArray() bool { return n.s != nil && (n.s.Type == "array" || n.s.Items != nil) }

// metaFields are the object's own fields, kept by the API server whatever
// the schema says.
var metaFields = []string{"apiVersion", "kind", "metadata"}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// RemovedFields returns the fields that schema old keeps and schema next
// prunes, as paths: `spec.replicas`, `spec.ports[].name` (a field of an
// array's items), `spec.labels.*` (any key of a map), `spec.*` (any field
// next does not declare where old preserved unknown fields). A nil schema
// keeps everything. apiVersion, kind and metadata are never removed. Only
// removals are found: a changed type or a new constraint is not.
func RemovedFields(old, next *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	removed(root(old), root(next), "", &out)
	slices.Sort(out)
	return out
}

func removed(o, n node, path string, out *[]string) {
	if !o.keeps() || n.all {
		return
	}
	if n.s == nil {
		*out = append(*out, path)
		return
	}
	// The fields either declares: a field old keeps without declaring it
	// (under x-kubernetes-preserve-unknown-fields, a map's key) may be
	// declared by next, with a schema that prunes below it.
	var names []string
	for _, s := range []*apiextensionsv1.JSONSchemaProps{o.s, n.s} {
		if s != nil {
			names = append(names, sortedKeys(s.Properties)...)
		}
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		if path == "" && slices.Contains(metaFields, name) {
			continue
		}
		removed(o.prop(name), n.prop(name), join(path, name), out)
	}
	// The fields neither declares: unknown fields, a map's keys.
	if o.isObject() || n.isObject() {
		removed(o.other(""), n.other(""), join(path, "*"), out)
	}
	if o.isArray() || (o.all && n.isArray()) {
		removed(o.items(), n.items(), path+"[]", out)
	}
}

// FindRemoved returns the path of the first field that obj sets (with its
// array indices: `spec.ports[1].name`) that schema old keeps and schema next
// prunes, or "" when next keeps all of obj that old keeps.
func FindRemoved(obj map[string]any, old, next *apiextensionsv1.JSONSchemaProps) string {
	return find(obj, root(old), root(next), "")
}

func find(v any, o, n node, path string) string {
	if !o.keeps() || n.all {
		return ""
	}
	if n.s == nil {
		return path
	}
	switch v := v.(type) {
	case map[string]any:
		for _, name := range sortedKeys(v) {
			if path == "" && slices.Contains(metaFields, name) {
				continue
			}
			if p := find(v[name], o.prop(name), n.prop(name), join(path, name)); p != "" {
				return p
			}
		}
	case []any:
		for i, item := range v {
			if p := find(item, o.items(), n.items(), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Lister lists the stored objects of the CRD's kind, in all namespaces, as
// read at version.
type Lister func(version string) ([]unstructured.Unstructured, error)

// Check returns a *RefusedError when applying next over live would drop a
// served or stored version, or remove from a version's schema a field that a
// stored object sets; the objects are listed (at most once per version)
// only for versions whose schema loses fields. An error of list is returned
// as it is: nothing can be said without the objects.
func Check(live, next *apiextensionsv1.CustomResourceDefinition, list Lister) error {
	if dropped := DroppedVersions(live, next); len(dropped) > 0 {
		return &RefusedError{CRD: live.Name, Reason: fmt.Sprintf("it drops version %s, which the live CRD serves or has stored objects in (status.storedVersions %s); "+
			"keep the version (served: false stops serving it), and migrate the stored objects before removing it", strings.Join(dropped, ", "), strings.Join(live.Status.StoredVersions, ", "))}
	}
	for _, nv := range next.Spec.Versions {
		i := slices.IndexFunc(live.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == nv.Name })
		if i < 0 {
			continue
		}
		lv := live.Spec.Versions[i]
		oldSchema, nextSchema := schemaOf(lv), schemaOf(nv)
		fields := RemovedFields(oldSchema, nextSchema)
		if len(fields) == 0 {
			continue
		}
		objs, err := list(nv.Name)
		if err != nil {
			return fmt.Errorf("list the objects of CRD %s at %s, to check the fields its change removes (%s): %w", live.Name, nv.Name, strings.Join(fields, ", "), err)
		}
		for _, o := range objs {
			if path := FindRemoved(o.Object, oldSchema, nextSchema); path != "" {
				return &RefusedError{CRD: live.Name, Reason: fmt.Sprintf("version %s of the new CRD removes field %s, which object %s sets; "+
					"the API server would prune it from every stored object (keep the field, or remove it from the objects first)", nv.Name, path, objectName(o))}
			}
		}
	}
	return nil
}

func schemaOf(v apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.JSONSchemaProps {
	if v.Schema == nil {
		return nil
	}
	return v.Schema.OpenAPIV3Schema
}

func objectName(o unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
