package catalog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/render"
)

// KindFile is the file that makes a folder a kind folder.
const KindFile = "kind.yaml"

// DefaultWorkers is the number of objects of one kind reconciled at once
// when kind.yaml does not say.
const DefaultWorkers = 2

// Spec is kind.yaml: the kind a folder serves and how.
type Spec struct {
	// APIVersion and Kind name the watched kind as a manifest does. The
	// resource and its scope come from discovery, never from the user.
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Workers is how many objects of the kind are reconciled concurrently.
	Workers int `json:"workers,omitempty"`
	// AllowClusterScoped lets the templates render cluster-scoped children
	// and children in other namespaces than the parent's. Off by default so
	// that whoever may create the custom resource in one namespace can never
	// make the operator write outside it.
	AllowClusterScoped bool `json:"allowClusterScoped,omitempty"`
	// Lookups are the kinds the templates may read with lookup and
	// lookupSelect; nothing else is readable.
	Lookups []LookupSpec `json:"lookups,omitempty"`
}

// LookupSpec declares one readable kind.
type LookupSpec struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// AllNamespaces lets templates read this kind in every namespace, not
	// only the parent's. Cluster-scoped kinds (Nodes) need no such opt-in.
	AllNamespaces bool `json:"allNamespaces,omitempty"`
}

// Kind is one loaded kind folder.
type Kind struct {
	// Name is the folder's name, e.g. "memcached".
	Name string
	// Dir is the folder's path.
	Dir string
	// GVK is the watched kind.
	GVK  schema.GroupVersionKind
	Spec Spec
	// Templates are the folder's parsed templates.
	Templates *render.Set
	// Fingerprint identifies the folder's content at load (see Fingerprint).
	Fingerprint string
}

// Workers is the number of concurrent reconciles for the kind.
func (k *Kind) Workers() int {
	if k.Spec.Workers > 0 {
		return k.Spec.Workers
	}
	return DefaultWorkers
}

// LookupGVKs returns the declared lookup kinds.
func (k *Kind) LookupGVKs() []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(k.Spec.Lookups))
	for _, l := range k.Spec.Lookups {
		out = append(out, schema.FromAPIVersionAndKind(l.APIVersion, l.Kind))
	}
	return out
}

// LoadKind loads one kind folder.
func LoadKind(dir string) (*Kind, error) {
	fp, err := Fingerprint(dir)
	if err != nil {
		return nil, fmt.Errorf("read folder: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, KindFile))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", KindFile, err)
	}
	spec, err := parseSpec(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KindFile, err)
	}
	set, err := render.ParseFS(os.DirFS(dir))
	if err != nil {
		return nil, err
	}
	return &Kind{
		Name:        filepath.Base(dir),
		Dir:         dir,
		GVK:         schema.FromAPIVersionAndKind(spec.APIVersion, spec.Kind),
		Spec:        *spec,
		Templates:   set,
		Fingerprint: fp,
	}, nil
}

func parseSpec(data []byte) (*Spec, error) {
	var s Spec
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return nil, err
	}
	if err := validAPIVersionKind(s.APIVersion, s.Kind); err != nil {
		return nil, err
	}
	if s.Workers < 0 {
		return nil, fmt.Errorf("workers must not be negative, got %d", s.Workers)
	}
	for i, l := range s.Lookups {
		if err := validAPIVersionKind(l.APIVersion, l.Kind); err != nil {
			return nil, fmt.Errorf("lookups[%d]: %w", i, err)
		}
	}
	return &s, nil
}

func validAPIVersionKind(apiVersion, kind string) error {
	if apiVersion == "" || kind == "" {
		return errors.New("apiVersion and kind are required")
	}
	if _, err := schema.ParseGroupVersion(apiVersion); err != nil {
		return fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	return nil
}
