package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/convert"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
	shortschema "github.com/tmplop/operator/engine/schema"
)

// VersionSpec is one entry of kind.yaml's versions: a version the kind's
// CRD serves besides the hub, the version of apiVersion that templates,
// status.yaml, readyWhen and the watches see (docs/versions.md). The hub
// may be listed too, for served, storage and deprecated alone: its schema
// is kind.yaml's top-level spec and status.
type VersionSpec struct {
	// Name is the version, a DNS-1035 label: v1alpha1.
	Name string `json:"name"`
	// Served: the API server serves the version (default true).
	Served *bool `json:"served,omitempty"`
	// Storage: the version the API server stores objects at; at most one
	// version says so, else the hub is.
	Storage bool `json:"storage,omitempty"`
	// Deprecated and DeprecationWarning: the API server warns its clients.
	Deprecated         bool   `json:"deprecated,omitempty"`
	DeprecationWarning string `json:"deprecationWarning,omitempty"`
	// SpecSchema and StatusSchema are the version's short schema (absent:
	// spec preserves unknown fields, status is the hub's).
	SpecSchema   map[string]any `json:"spec,omitempty"`
	StatusSchema map[string]any `json:"status,omitempty"`
	// PrinterColumns are the version's columns (absent: the hub's).
	PrinterColumns []apiextensionsv1.CustomResourceColumnDefinition `json:"printerColumns,omitempty"`
	// Lossy: the conversions to and from this version drop what the
	// target cannot hold instead of keeping it in an annotation.
	Lossy bool `json:"lossy,omitempty"`

	specSchema, statusSchema *apiextensionsv1.JSONSchemaProps
}

// Version is one version of a kind as the folder declares it, resolved:
// defaults applied, the hub included.
type Version struct {
	Name               string
	Served             bool
	Storage            bool
	Deprecated         bool
	DeprecationWarning string
	Lossy              bool
	// Hub: templates, status.yaml, readyWhen and the watches see objects
	// at this version.
	Hub bool
}

// maxDeprecationWarning is the API server's limit.
const maxDeprecationWarning = 256

// validVersions checks kind.yaml's versions against its apiVersion, the
// hub: each mistake a fieldErr at the entry's field.
func (s *Spec) validVersions() error {
	if len(s.Versions) == 0 {
		return nil
	}
	// A built-in kind's versions are Kubernetes': validCRDFields refused
	// them already.
	hub := s.hubVersion()
	seen := map[string]int{}
	storage := -1
	for i := range s.Versions {
		v := &s.Versions[i]
		item := fmt.Sprintf("versions[%d]", i)
		if errs := validation.IsDNS1035Label(v.Name); len(errs) > 0 {
			return fieldErr(fmt.Errorf("%s: name %q: %s", item, v.Name, strings.Join(errs, "; ")), item, "name")
		}
		if j, dup := seen[v.Name]; dup {
			return fieldErr(fmt.Errorf("%s: version %s is already listed by versions[%d]", item, v.Name, j), item, "name")
		}
		seen[v.Name] = i
		if v.Storage {
			if storage >= 0 {
				return fieldErr(fmt.Errorf("%s: storage: versions[%d] (%s) is the storage version already: at most one version is stored", item, storage, s.Versions[storage].Name), item, "storage")
			}
			storage = i
		}
		if v.Storage && v.Served != nil && !*v.Served {
			return fieldErr(fmt.Errorf("%s: the storage version %s must be served", item, v.Name), item, "served")
		}
		if v.DeprecationWarning != "" && !v.Deprecated {
			return fieldErr(fmt.Errorf("%s: deprecationWarning needs deprecated: true", item), item, "deprecationWarning")
		}
		if len(v.DeprecationWarning) > maxDeprecationWarning {
			return fieldErr(fmt.Errorf("%s: deprecationWarning is %d characters, more than the %d the API server takes", item, len(v.DeprecationWarning), maxDeprecationWarning), item, "deprecationWarning")
		}
		if v.Name == hub {
			if err := v.validHub(item); err != nil {
				return err
			}
			continue
		}
		var err error
		if v.SpecSchema != nil {
			if v.specSchema, err = shortschema.Parse("spec", v.SpecSchema); err != nil {
				return versionSchemaErr(item, err)
			}
		}
		if v.StatusSchema != nil {
			if v.statusSchema, err = shortschema.ParseStatus(v.StatusSchema); err != nil {
				return versionSchemaErr(item, err)
			}
		}
	}
	return nil
}

// validHub checks the hub's entry of versions, which may say only how it
// is served and stored.
func (v *VersionSpec) validHub(item string) error {
	switch {
	case v.Served != nil && !*v.Served:
		return fieldErr(fmt.Errorf("%s: the hub %s (kind.yaml's apiVersion) must be served: it is the version the operator watches", item, v.Name), item, "served")
	case v.SpecSchema != nil:
		return fieldErr(fmt.Errorf("%s: the hub's spec schema is kind.yaml's top-level spec", item), item, "spec")
	case v.StatusSchema != nil:
		return fieldErr(fmt.Errorf("%s: the hub's status schema is kind.yaml's top-level status", item), item, "status")
	case len(v.PrinterColumns) > 0:
		return fieldErr(fmt.Errorf("%s: the hub's printer columns are kind.yaml's top-level printerColumns", item), item, "printerColumns")
	case v.Lossy:
		return fieldErr(fmt.Errorf("%s: lossy: mark the version whose conversions may lose data, not the hub", item), item, "lossy")
	}
	return nil
}

// hubVersion is the version of kind.yaml's apiVersion: the hub.
func (s *Spec) hubVersion() string {
	return schema.FromAPIVersionAndKind(s.APIVersion, s.Kind).Version
}

// versionSchemaErr is a short schema's error in the entry item of
// versions, located there.
func versionSchemaErr(item string, err error) error {
	if se, ok := errors.AsType[*shortschema.Error](err); ok {
		return fieldErr(fmt.Errorf("%s.%w", item, err), append([]string{item}, se.Keys()...)...)
	}
	return fieldErr(fmt.Errorf("%s: %w", item, err), item)
}

// versionsOf resolves the kind's versions: kind.yaml's, or crd.yaml's
// (crdVersions, nil when the folder has none or it does not decode), the
// hub first when not listed.
func versionsOf(spec *Spec, crdVersions []Version) []Version {
	hub := spec.hubVersion()
	var out []Version
	if crdVersions != nil {
		if !slices.ContainsFunc(crdVersions, func(v Version) bool { return v.Name == hub }) {
			// crd.yaml must serve the hub, which engine/crd reports at
			// its line; until then the kind is the hub alone.
			return []Version{{Name: hub, Served: true, Storage: true, Hub: true}}
		}
		out = crdVersions
	} else {
		for _, v := range spec.Versions {
			out = append(out, Version{Name: v.Name, Served: v.Served == nil || *v.Served, Storage: v.Storage,
				Deprecated: v.Deprecated, DeprecationWarning: v.DeprecationWarning, Lossy: v.Lossy})
		}
	}
	found := false
	for i := range out {
		if out[i].Name == hub {
			out[i].Hub, found = true, true
		}
	}
	if !found {
		out = append([]Version{{Name: hub, Served: true, Hub: true}}, out...)
	}
	storage := -1
	for i, v := range out {
		if v.Storage && storage < 0 {
			storage = i
		}
	}
	for i := range out {
		out[i].Storage = i == storage || storage < 0 && out[i].Hub
	}
	return out
}

// crdVersions reads the versions of the folder's crd.yaml, nil when it
// does not decode: engine/crd reads it strictly and reports its mistakes
// (crd.ForKind, lint's LNT010); here it only tells which versions the kind
// has.
func crdVersions(data []byte) []Version {
	var c struct {
		Spec struct {
			Versions []struct {
				Name               string  `json:"name"`
				Served             bool    `json:"served"`
				Storage            bool    `json:"storage"`
				Deprecated         bool    `json:"deprecated"`
				DeprecationWarning *string `json:"deprecationWarning"`
			} `json:"versions"`
		} `json:"spec"`
	}
	var doc []byte
	for _, d := range render.SplitDocuments(data) {
		if !render.Blank(d.Text) {
			doc = d.Text
			break
		}
	}
	if doc == nil || yaml.Unmarshal(doc, &c) != nil || len(c.Spec.Versions) == 0 {
		return nil
	}
	out := make([]Version, 0, len(c.Spec.Versions))
	for _, v := range c.Spec.Versions {
		out = append(out, Version{Name: v.Name, Served: v.Served, Storage: v.Storage, Deprecated: v.Deprecated})
		if v.DeprecationWarning != nil {
			out[len(out)-1].DeprecationWarning = *v.DeprecationWarning
		}
	}
	return out
}

// compileConverter checks the folder's conversion templates against its
// versions and parses them (engine/convert): nil when the kind has one
// version, which then may have no conversion file.
func compileConverter(files layout.Files, versions []Version, budget render.Budget) (*convert.Converter, error) {
	conversions := files.Conversions()
	if len(versions) < 2 && len(conversions) == 0 {
		return nil, nil
	}
	var hub string
	names := make([]string, 0, len(versions))
	lossy := map[string]bool{}
	for _, v := range versions {
		if v.Hub {
			hub = v.Name
		}
		names = append(names, v.Name)
		lossy[v.Name] = v.Lossy
	}
	templates := files.Templates()
	for name := range templates {
		if layout.RoleOf(name) != layout.Helper {
			delete(templates, name)
		}
	}
	for name, text := range conversions {
		templates[name] = text
	}
	c, err := convert.Compile(hub, names, lossy, templates, budget)
	if err != nil {
		return nil, err
	}
	if len(versions) < 2 {
		return nil, nil
	}
	return c, nil
}

// Versions are the kind's versions: the hub (kind.yaml's apiVersion)
// alone for a folder of one version, else kind.yaml's versions or
// crd.yaml's, in their order, the hub first when they do not list it.
func (k *Kind) Versions() []Version {
	if k.versions == nil {
		// A Kind made without Compile (a test's): its one version.
		return []Version{{Name: k.GVK.Version, Served: true, Storage: true, Hub: true}}
	}
	return append([]Version(nil), k.versions...)
}

// Hub is the version templates, status.yaml, readyWhen and the watches
// see objects at: kind.yaml's apiVersion's.
func (k *Kind) Hub() string { return k.GVK.Version }

// StorageVersion is the version the API server stores the kind's objects
// at: the one marked storage, else the hub.
func (k *Kind) StorageVersion() string {
	for _, v := range k.Versions() {
		if v.Storage {
			return v.Name
		}
	}
	return k.Hub()
}

// Converter converts the kind's objects between its versions with the
// folder's conversion templates, nil for a kind of one version. Its
// renders have kind.yaml's budget over the defaults: a caller with the
// operator's budget flags uses Converter().WithBudget(k.RenderBudget(base)).
func (k *Kind) Converter() *convert.Converter { return k.converter }

// VersionSchemas are the OpenAPI schemas of a non-hub version's spec and
// status from kind.yaml's versions (copies; nil where kind.yaml gives
// none), and its printer columns (nil: the hub's). For the hub: ShortSchemas
// and kind.yaml's printerColumns.
func (k *Kind) VersionSchemas(version string) (spec, status *apiextensionsv1.JSONSchemaProps, columns []apiextensionsv1.CustomResourceColumnDefinition) {
	if version == k.Hub() {
		spec, status = k.ShortSchemas()
		return spec, status, k.Spec.PrinterColumns
	}
	for _, v := range k.Spec.Versions {
		if v.Name == version {
			return v.specSchema.DeepCopy(), v.statusSchema.DeepCopy(), v.PrinterColumns
		}
	}
	return nil, nil, nil
}
