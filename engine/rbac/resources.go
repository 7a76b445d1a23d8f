package rbac

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Resources maps kinds to the resources RBAC rules name, offline: built-in
// kinds from client-go's scheme, custom kinds from CRD files, and the
// remaining ones by the REST mapper's guess, with a warning.
type Resources struct {
	crds map[schema.GroupKind]crdNames
	// Warn receives one message per kind whose resource was guessed.
	Warn func(msg string)

	mu      sync.Mutex
	guessed map[schema.GroupKind]bool
}

type crdNames struct {
	plural string
	file   string
}

// NewResources returns a Resources that knows the CRDs of the files under
// dirs (*.yaml, *.yml and *.json, multi-document, any depth; documents that
// are not CRDs are skipped).
func NewResources(dirs ...string) (*Resources, error) {
	r := &Resources{crds: map[schema.GroupKind]crdNames{}, guessed: map[schema.GroupKind]bool{}}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				return r.readCRDs(path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("--crds %s: %w", dir, err)
		}
	}
	return r, nil
}

// crd is what a CustomResourceDefinition says of its resource.
type crd struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Group string `json:"group"`
		Names struct {
			Kind   string `json:"kind"`
			Plural string `json:"plural"`
		} `json:"names"`
	} `json:"spec"`
}

func (r *Resources) readCRDs(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var c crd
		if err := yaml.Unmarshal(doc, &c); err != nil {
			return fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if c.Kind != "CustomResourceDefinition" || !strings.HasPrefix(c.APIVersion, "apiextensions.k8s.io/") {
			continue
		}
		if c.Spec.Group == "" || c.Spec.Names.Kind == "" || c.Spec.Names.Plural == "" {
			return fmt.Errorf("%s: document %d: a CustomResourceDefinition needs spec.group, spec.names.kind and spec.names.plural", path, i)
		}
		gk := schema.GroupKind{Group: c.Spec.Group, Kind: c.Spec.Names.Kind}
		if prev, dup := r.crds[gk]; dup && prev.plural != c.Spec.Names.Plural {
			return fmt.Errorf("%s: %s is also defined by %s, as %q", path, gk, prev.file, prev.plural)
		}
		r.crds[gk] = crdNames{plural: c.Spec.Names.Plural, file: path}
	}
}

// Resource returns the resource of kind gk.
func (r *Resources) Resource(gk schema.GroupKind) schema.GroupResource {
	if c, ok := r.crds[gk]; ok {
		return schema.GroupResource{Group: gk.Group, Resource: c.plural}
	}
	if res, ok := builtIn()[gk]; ok {
		return schema.GroupResource{Group: gk.Group, Resource: res}
	}
	plural, _ := meta.UnsafeGuessKindToResource(gk.WithVersion(""))
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.guessed[gk] {
		r.guessed[gk] = true
		if r.Warn != nil {
			r.Warn(fmt.Sprintf("no CRD found for %s (--crds) and it is not a built-in kind: guessed its resource %q", kindString(gk), plural.Resource))
		}
	}
	return schema.GroupResource{Group: gk.Group, Resource: plural.Resource}
}

func kindString(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind + " (core)"
	}
	return gk.String()
}

// notResources are kinds of the scheme that have an ObjectMeta but are
// bodies of subresources (pods/eviction, */scale, serviceaccounts/token)
// or not served, not resources of their own.
var notResources = map[schema.GroupKind]bool{
	{Group: "policy", Kind: "Eviction"}:                    true,
	{Group: "apps", Kind: "Scale"}:                         true,
	{Group: "autoscaling", Kind: "Scale"}:                  true,
	{Group: "extensions", Kind: "Scale"}:                   true,
	{Group: "authentication.k8s.io", Kind: "TokenRequest"}: true,
	{Kind: "RangeAllocation"}:                              true,
}

// corrections are the built-in kinds whose resource is not what
// meta.UnsafeGuessKindToResource makes of the kind (none known today: the
// guess knows Endpoints). A test checks the table against the real names.
var corrections = map[schema.GroupKind]string{}

var (
	builtInOnce  sync.Once
	builtInTable map[schema.GroupKind]string
)

// builtIn is Kubernetes' built-in kinds and their resources, from
// client-go's scheme: every registered type with an ObjectMeta.
func builtIn() map[schema.GroupKind]string {
	builtInOnce.Do(func() {
		objectMeta := reflect.TypeOf(metav1.ObjectMeta{})
		builtInTable = map[schema.GroupKind]string{}
		for gvk, typ := range scheme.Scheme.AllKnownTypes() {
			f, ok := typ.FieldByName("ObjectMeta")
			if !ok || !f.Anonymous || f.Type != objectMeta || notResources[gvk.GroupKind()] {
				continue
			}
			plural, _ := meta.UnsafeGuessKindToResource(gvk)
			builtInTable[gvk.GroupKind()] = plural.Resource
		}
		for gk, res := range corrections {
			builtInTable[gk] = res
		}
	})
	return builtInTable
}

// BuiltInKinds returns the built-in table sorted, "group/Kind resource"
// per line (for tests and debugging).
func BuiltInKinds() []string {
	var out []string
	for gk, res := range builtIn() {
		out = append(out, fmt.Sprintf("%s/%s %s", gk.Group, gk.Kind, res))
	}
	sort.Strings(out)
	return out
}
