package operator_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// loadChart loads the chart as helm install does (.helmignore applies).
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// render validates values against the schema, renders the chart as
// release in releaseNamespace and decodes what it renders.
func render(ch *chart.Chart, release string, values map[string]any) (objects, error) {
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{
		Name: release, Namespace: releaseNamespace, Revision: 1, IsInstall: true,
	}, nil)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, err
	}
	objs := objects{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		// As helm install: NOTES.txt is shown, partials render nothing.
		if strings.HasSuffix(name, "NOTES.txt") || strings.HasPrefix(filepath.Base(name), "_") {
			continue
		}
		if err := decode(name, []byte(files[name]), objs); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

func mustRender(t *testing.T, release string, values map[string]any) objects {
	t.Helper()
	objs, err := render(loadChart(t), release, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// deployObjects are what make deploy applies: kustomize deploy, crds/ and
// kustomize deploy/examples.
func deployObjects(t *testing.T) objects {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH: it builds deploy/ (kubectl kustomize)")
	}
	objs := objects{}
	for _, dir := range []string{"deploy", "deploy/examples"} {
		var stderr bytes.Buffer
		cmd := exec.CommandContext(t.Context(), kubectl, "kustomize", filepath.Join(repoRoot, dir))
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v: %s", dir, err, stderr.Bytes())
		}
		if err := decode(dir, out, objs); err != nil {
			t.Fatal(err)
		}
	}
	crds, err := filepath.Glob(filepath.Join(repoRoot, "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range crds {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := decode(f, data, objs); err != nil {
			t.Fatal(err)
		}
	}
	return objs
}

// decode adds the objects of a YAML stream to objs; an object twice is an
// error.
func decode(name string, data []byte, objs objects) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		js, err := sigsyaml.YAMLToJSON(doc)
		if err != nil {
			return fmt.Errorf("%s: document %d: %w\n%s", name, i, err, doc)
		}
		if string(js) == "null" {
			continue // comments only
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		k := keyOf(u)
		if _, dup := objs[k]; dup {
			return fmt.Errorf("%s: %s twice", name, k)
		}
		objs[k] = u
	}
}

// stripMeta returns a copy of u without the ignored labels and
// annotations (and without maps they leave empty), its binaryData unfolded.
func stripMeta(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	u = u.DeepCopy()
	for _, meta := range [][]string{{"metadata"}, {"spec", "template", "metadata"}} {
		for field, ignored := range map[string][]string{"labels": ignoredLabels, "annotations": ignoredAnnotations} {
			path := append(slices.Clone(meta), field)
			m, ok, err := unstructured.NestedStringMap(u.Object, path...)
			if err != nil {
				t.Fatalf("%s: %s: %v", keyOf(u), strings.Join(path, "."), err)
			}
			if !ok {
				continue
			}
			for _, k := range ignored {
				delete(m, k)
			}
			if len(m) == 0 {
				unstructured.RemoveNestedField(u.Object, path...)
			} else if err := unstructured.SetNestedStringMap(u.Object, m, path...); err != nil {
				t.Fatal(err)
			}
		}
	}
	// binaryData is base64, which kustomize folds into lines and the API
	// server reads without them: compare the bytes.
	if bin, ok, _ := unstructured.NestedStringMap(u.Object, "binaryData"); ok {
		for k, v := range bin {
			bin[k] = strings.Join(strings.Fields(v), "")
		}
		if err := unstructured.SetNestedStringMap(u.Object, bin, "binaryData"); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// diff lists where got and want differ, by path.
func diff(path string, got, want any) []string {
	gm, gok := got.(map[string]any)
	wm, wok := want.(map[string]any)
	if gok && wok {
		var out []string
		keys := map[string]bool{}
		for k := range gm {
			keys[k] = true
		}
		for k := range wm {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			out = append(out, diff(join(path, k), gm[k], wm[k])...)
		}
		return out
	}
	gs, gok := got.([]any)
	ws, wok := want.([]any)
	if gok && wok && len(gs) == len(ws) {
		var out []string
		for i := range gs {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), gs[i], ws[i])...)
		}
		return out
	}
	if reflect.DeepEqual(got, want) {
		return nil
	}
	if g, ok := got.(string); ok {
		if w, ok := want.(string); ok {
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			return []string{fmt.Sprintf("%s: strings differ at byte %d of %d/%d: got %q, want %q", path, i, len(g), len(w), snippet(g, i), snippet(w, i))}
		}
	}
	return []string{fmt.Sprintf("%s: got %v, want %v", path, show(got), show(want))}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func snippet(s string, i int) string {
	return s[max(0, i-20):min(len(s), i+40)]
}

func show(v any) string {
	if v == nil {
		return "nothing"
	}
	b, err := sigsyaml.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(string(b))
}

func parseValues(t *testing.T, s string) map[string]any {
	t.Helper()
	vals, err := chartutil.ReadValues([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return vals.AsMap()
}

func get(t *testing.T, objs objects, apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	k := objKey{apiVersion, kind, namespace, name}
	u, ok := objs[k]
	if !ok {
		t.Fatalf("%s not rendered; rendered: %v", k, sortedKeys(objs))
	}
	return u
}

// container is the Deployment's one container.
func container(t *testing.T, d *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers, want 1", keyOf(d), len(cs))
	}
	return cs[0].(map[string]any)
}

// wantField checks the value at path, where a number is an index in a list;
// nil wants nothing there.
func wantField(t *testing.T, u *unstructured.Unstructured, want any, path ...string) {
	t.Helper()
	var v any = u.Object
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(c) {
				v = nil
			} else {
				v = c[i]
			}
		default:
			v = nil
		}
	}
	wantValue(t, keyOf(u).String()+" "+strings.Join(path, "."), v, want)
}

func wantValue(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %s, want %s", what, show(got), show(want))
	}
}

// wantArgs checks that the container has the args of has and none of hasNot.
func wantArgs(t *testing.T, c map[string]any, has, hasNot []string) {
	t.Helper()
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	for _, a := range has {
		if !slices.Contains(args, a) {
			t.Errorf("args %q: no %s", args, a)
		}
	}
	for _, a := range hasNot {
		if slices.Contains(args, a) {
			t.Errorf("args %q: %s", args, a)
		}
	}
}

func sortedKeys(objs objects) []objKey {
	keys := make([]objKey, 0, len(objs))
	for k := range objs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}
