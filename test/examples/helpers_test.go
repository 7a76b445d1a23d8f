package examples_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/internal/testsupport/fakelookup"
)

// Where the examples live, relative to this package.
const (
	templatesDir = "../../templates"
	crdsDir      = "../../crds"
	examplesDir  = "../../examples"
)

// sampleNamespace is where the samples are taken to be applied: they name no
// namespace, so kubectl puts them in the current one.
const sampleNamespace = "default"

// fixedNow is Input.Now of every render unless a test says otherwise. It is
// after the At sample's schedule (2019-04-12T10:12:00Z), so the golden At
// runs its Pod.
var fixedNow = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// kindFile is kind.yaml as the contract defines it. Decoded strictly, so that
// a typo in an example's kind.yaml fails here as it fails the operator.
type kindFile struct {
	APIVersion         string       `json:"apiVersion"`
	Kind               string       `json:"kind"`
	Workers            int          `json:"workers,omitempty"`
	AllowClusterScoped bool         `json:"allowClusterScoped,omitempty"`
	Lookups            []lookupKind `json:"lookups,omitempty"`
	// The kind's CRD in short (docs/schema.md): engine/crd generates
	// crds/ from it, and the tests here check crds/.
	Scope          string `json:"scope,omitempty"`
	Plural         string `json:"plural,omitempty"`
	Spec           any    `json:"spec,omitempty"`
	Status         any    `json:"status,omitempty"`
	PrinterColumns any    `json:"printerColumns,omitempty"`
	Validation     any    `json:"validation,omitempty"`
	// Readiness and order (docs/readiness.md).
	DependsOn any `json:"dependsOn,omitempty"`
	ReadyWhen any `json:"readyWhen,omitempty"`
	// Helm charts (docs/helm.md).
	AdoptHelmReleases bool `json:"adoptHelmReleases,omitempty"`
}

// lookupKind is one entry of kind.yaml lookups: a kind templates may read.
type lookupKind struct {
	APIVersion    string `json:"apiVersion"`
	Kind          string `json:"kind"`
	AllNamespaces bool   `json:"allNamespaces,omitempty"`
}

// example is one template folder with its CRD and its sample.
type example struct {
	name   string // folder name, e.g. "memcached"
	dir    string
	kind   kindFile
	set    kindRenderer
	policy *catalog.Kind // the folder as the operator loads it, for its lookup policy
	crd    *crd
	sample map[string]any // examples/<name>.yaml, with the namespace and generation the API would give it
}

// loadExamples loads every folder of templates/ with crds/<folder>.yaml and
// examples/<folder>.yaml, failing the test when one of the three is missing.
func loadExamples(t testing.TB) []*example {
	t.Helper()
	entries, err := os.ReadDir(templatesDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []*example
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		out = append(out, loadExample(t, e.Name()))
	}
	if len(out) == 0 {
		t.Fatalf("no template folders in %s", templatesDir)
	}
	return out
}

func loadExample(t testing.TB, name string) *example {
	t.Helper()
	ex := &example{name: name, dir: filepath.Join(templatesDir, name)}

	data, err := os.ReadFile(filepath.Join(ex.dir, "kind.yaml"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := yaml.UnmarshalStrict(data, &ex.kind); err != nil {
		t.Fatalf("%s/kind.yaml: %v", name, err)
	}
	if ex.policy, err = catalog.LoadKind(ex.dir); err != nil {
		t.Fatalf("%s: load: %v", name, err)
	}
	ex.set = kindRenderer{ex.policy}
	ex.crd = readCRD(t, filepath.Join(crdsDir, name+".yaml"))

	samples := readObjects(t, filepath.Join(examplesDir, name+".yaml"))
	if len(samples) != 1 {
		t.Fatalf("examples/%s.yaml: want one object, got %d", name, len(samples))
	}
	ex.sample = samples[0]
	meta := ex.sample["metadata"].(map[string]any)
	if _, ok := meta["namespace"]; !ok {
		meta["namespace"] = sampleNamespace
	}
	meta["generation"] = int64(1)
	return ex
}

// object returns a deep copy of the sample with edit applied, so that tests
// can vary it without touching the other tests' copy.
func (ex *example) object(edit func(obj map[string]any)) map[string]any {
	obj := deepCopy(ex.sample)
	if edit != nil {
		edit(obj)
	}
	return obj
}

// lookup returns a fake render.Lookup over objs that enforces what the
// engine enforces, by asking the folder's own lookup policy
// (catalog.Kind.ResolveLookup) with the engine's offline scope of a kind:
// only the kinds kind.yaml declares, and only in the parent's namespace
// unless the kind is cluster-scoped or declared allNamespaces. A template
// that breaks those rules fails here, not first in a cluster.
func (ex *example) lookup(objs []map[string]any) render.Lookup {
	return &fakelookup.Objects{Items: objs, Allow: func(apiVersion, kind, namespace string) error {
		gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
		namespaced, err := kube.OfflineNamespaced(gvk)
		if err != nil {
			return err
		}
		_, _, err = ex.policy.ResolveLookup(gvk.GroupKind(), namespaced, namespace, sampleNamespace)
		return err
	}}
}

// input is the render input for obj, with the fixed clock.
func (ex *example) input(obj map[string]any, cluster []map[string]any, children []map[string]any) render.Input {
	return render.Input{Object: obj, Lookup: ex.lookup(cluster), Children: byKind(children), Now: fixedNow}
}

// byKind indexes live children as render.Input.Children wants them.
func byKind(objs []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, obj := range objs {
		kind, _ := obj["kind"].(string)
		if out[kind] == nil {
			out[kind] = map[string]any{}
		}
		out[kind][nestedString(obj, "metadata", "name")] = obj
	}
	return out
}

// readObjects reads a YAML stream of objects ('---' separated), expanding
// `kind: List` documents, the form `kubectl get -o yaml` writes; nil when the
// file does not exist. Numbers decode as the API server's (int64).
func readObjects(t testing.TB, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return objs
}

func decodeObjects(data []byte) ([]map[string]any, error) {
	var out []map[string]any
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var obj map[string]any
		if err := decodeLikeAPI(doc, &obj); err != nil {
			return nil, err
		}
		if obj == nil {
			continue // a document of comments only
		}
		if kind, _ := obj["kind"].(string); strings.HasSuffix(kind, "List") {
			items, _ := obj["items"].([]any)
			for _, it := range items {
				m, ok := it.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s item is not an object", kind)
				}
				out = append(out, m)
			}
			continue
		}
		out = append(out, obj)
	}
}

// decodeLikeAPI decodes YAML through JSON with whole numbers as int64, as
// objects arrive from the API server and as render.Input wants them.
func decodeLikeAPI(data []byte, v any) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	return utiljson.Unmarshal(j, v)
}

func deepCopy(m map[string]any) map[string]any {
	data, err := utiljson.Marshal(m)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

func nested(obj map[string]any, path ...string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func nestedString(obj map[string]any, path ...string) string {
	s, _ := nested(obj, path...).(string)
	return s
}

// deleteNested removes the field at path, e.g. ("spec", "size").
func deleteNested(obj map[string]any, path ...string) {
	parent, ok := nested(obj, path[:len(path)-1]...).(map[string]any)
	if ok {
		delete(parent, path[len(path)-1])
	}
}

// lineOf returns the 1-based line of the first line of file that contains
// needle, so that tests name template lines by content, not by number.
func lineOf(t *testing.T, file, needle string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, needle) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line containing %q", file, needle)
	return 0
}

// kindRenderer renders a folder through its catalog.Kind, the door the
// operator renders through: a folder of templates and a Helm chart alike
// (offline, a chart sees Helm's default .Capabilities).
type kindRenderer struct{ k *catalog.Kind }

func (r kindRenderer) Children(ctx context.Context, in render.Input) (*render.Result, error) {
	res, err := r.k.Children(ctx, in, chart.Cluster{})
	if err != nil {
		return nil, err
	}
	return res.Result, nil
}

func (r kindRenderer) Status(ctx context.Context, in render.Input) (*render.Result, error) {
	return r.k.Status(ctx, in)
}

// HasStatus: the folder renders a status of its own (a chart: its name
// and version).
func (r kindRenderer) HasStatus() bool { return r.k.HasStatus() }
