package author

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/crd"
	"github.com/tmplop/operator/test/cluster"
)

// schemaFolder is a kind described only by its short schema; its group is
// this test's own.
const schemaFolder = "testdata/schema/bakery"

// TestSchema generates the CRD of a short schema with engine/crd, has the
// API server accept it, and checks what the markers do there: defaults
// filled in, bounds, enums, required fields, immutability and a CEL rule
// refused with their messages, and the printer columns in `kubectl get`.
func TestSchema(t *testing.T) {
	ctx := context.Background()
	k, err := catalog.LoadKind(schemaFolder)
	if err != nil {
		t.Fatal(err)
	}
	c, err := crd.ForKind(k)
	if err != nil {
		t.Fatal(err)
	}
	data, err := crd.YAML(c, filepath.Join("test/author", schemaFolder, catalog.KindFile))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kubectl(ctx, "apply", "--server-side", "-f", file); err != nil {
		t.Fatalf("the API server refuses the generated CRD: %v\n%s", err, data)
	}
	t.Cleanup(func() { _, _ = env.Kubectl(context.Background(), "delete", "-f", file, "--wait=false") })
	if _, err := env.Kubectl(ctx, "wait", "--for=condition=Established", "crd/"+c.Name, "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	res := schema.GroupVersionResource{Group: c.Spec.Group, Version: c.Spec.Versions[0].Name, Resource: c.Spec.Names.Plural}
	if res.Resource != "bakeries" {
		t.Errorf("plural %q, want bakeries", res.Resource)
	}
	ns := env.Namespace(t)
	client := env.Resource(res, ns)
	bakery := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": k.GVK.GroupVersion().String(), "kind": k.GVK.Kind,
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}

	// Defaults: ovens and bread left out, and a shelf's loaves.
	var got *unstructured.Unstructured
	cluster.Eventually(t, 30*time.Second, "the first Bakery is created", func(ctx context.Context) (bool, error) {
		got, err = client.Create(ctx, bakery("corner", map[string]any{
			"owner": "ann", "shelves": []any{map[string]any{"name": "front"}},
		}), metav1.CreateOptions{})
		if apierrors.IsNotFound(err) { // the resource is not served yet
			return false, err
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err = client.Get(ctx, "corner", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ovens, _, _ := unstructured.NestedInt64(got.Object, "spec", "ovens")
	bread, _, _ := unstructured.NestedString(got.Object, "spec", "bread")
	shelves, _, _ := unstructured.NestedSlice(got.Object, "spec", "shelves")
	if ovens != 2 || bread != "wheat" || len(shelves) != 1 || shelves[0].(map[string]any)["loaves"] != int64(0) {
		t.Errorf("defaults not applied: ovens %d, bread %q, shelves %v", ovens, bread, shelves)
	}

	// What the API server refuses, and the message it gives.
	shelvesOf := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"name": string(rune('a' + i))}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		spec map[string]any
		want []string
	}{
		{"below the minimum", map[string]any{"owner": "ann", "ovens": 0},
			[]string{"spec.ovens", "should be greater than or equal to 1"}},
		{"not in the enum", map[string]any{"owner": "ann", "bread": "bagel"},
			[]string{`spec.bread: Unsupported value: "bagel"`, `"rye", "spelt", "wheat"`}},
		{"without the required field", map[string]any{"ovens": 1},
			[]string{"spec.owner: Required value"}},
		{"an item without its required field", map[string]any{"owner": "ann", "shelves": []any{map[string]any{"loaves": 1}}},
			[]string{"spec.shelves[0].name: Required value"}},
		{"against the CEL rule", map[string]any{"owner": "ann", "ovens": 1, "shelves": shelvesOf(3)},
			[]string{"spec.shelves: Invalid value", "a Bakery has at most two shelves per oven"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.Create(ctx, bakery("bad", tc.spec), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: %v, want Invalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the API server's message lacks %q:\n%v", w, err)
				}
			}
		})
	}

	// immutable: the owner is set once.
	got.Object["spec"].(map[string]any)["owner"] = "bob"
	if _, err := client.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.owner") ||
		!strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("update of an immutable field: %v", err)
	}

	// The printer columns: the folder's, then Ready and Age.
	out, err := env.Kubectl(ctx, "get", res.Resource, "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get:\n%s", out)
	}
	if header := strings.Join(strings.Fields(lines[0]), " "); header != "NAME OVENS BREAD READY AGE" {
		t.Errorf("columns %q, want NAME OVENS BREAD READY AGE", header)
	}
	if row := strings.Fields(lines[1]); len(row) < 3 || row[0] != "corner" || row[1] != "2" || row[2] != "wheat" {
		t.Errorf("row %q, want corner 2 wheat ...", lines[1])
	}
}

// TestSchemaGoldenCRDs has the API server validate the CRDs of engine/crd's
// golden files, which use every form of the short schema, a cluster scope
// and rules with a fieldPath: what the generator writes, the server takes.
// (The examples' crds/ are applied by test/e2e.)
func TestSchemaGoldenCRDs(t *testing.T) {
	dir := filepath.Join(env.RepoRoot(), "engine", "crd", "testdata", "golden")
	if out, err := env.Kubectl(context.Background(), "apply", "--server-side", "--dry-run=server", "-f", dir); err != nil {
		t.Fatalf("the API server refuses a generated CRD: %v\n%s", err, out)
	}
}
