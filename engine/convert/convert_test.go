package convert

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

const (
	v1alpha1 = "cache.example.com/v1alpha1"
	v1       = "cache.example.com/v1"
)

// memcached is the Converter of testdata/memcached: hub v1 (spec.replicas,
// spec.maxConnections), v1alpha1 (spec.size).
func memcached(t testing.TB, lossy map[string]bool) *Converter {
	t.Helper()
	files, err := layout.Read(os.DirFS("testdata/memcached"))
	if err != nil {
		t.Fatal(err)
	}
	templates := files.Conversions()
	for name, text := range files.Templates() {
		templates[name] = text
	}
	c, err := Compile("v1", []string{"v1alpha1", "v1"}, lossy, templates, render.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// load reads a YAML object as the API server's JSON decodes it
// (unstructured content: int64 for whole numbers).
func load(t testing.TB, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, data)
}

func decode(t testing.TB, data []byte) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestConvertGolden converts the examples of testdata/in along a chain of
// versions and compares the result with testdata/golden (-update rewrites
// them). A chain that comes back to its first version gives back the
// object it started from.
func TestConvertGolden(t *testing.T) {
	c := memcached(t, nil)
	cases := []struct {
		name  string
		in    string
		chain []string
	}{
		{name: "v1alpha1-to-v1", in: "v1alpha1.yaml", chain: []string{v1}},
		{name: "v1-to-v1alpha1", in: "v1.yaml", chain: []string{v1alpha1}},
		{name: "v1-to-v1alpha1-to-v1", in: "v1.yaml", chain: []string{v1alpha1, v1}},
		{name: "v1alpha1-to-v1-to-v1alpha1", in: "v1alpha1.yaml", chain: []string{v1, v1alpha1}},
		{name: "v1-plain-to-v1alpha1", in: "v1-plain.yaml", chain: []string{v1alpha1}},
		{name: "empty-to-v1", in: "empty.yaml", chain: []string{v1}},
		{name: "same-version", in: "v1.yaml", chain: []string{v1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := load(t, filepath.Join("testdata/in", tc.in))
			obj := in
			for _, to := range tc.chain {
				var err error
				if obj, err = c.Convert(t.Context(), obj, to); err != nil {
					t.Fatal(err)
				}
				if obj["apiVersion"] != to {
					t.Fatalf("apiVersion %v, want %s", obj["apiVersion"], to)
				}
			}
			if tc.chain[len(tc.chain)-1] == in["apiVersion"] && !equal(obj, in) {
				t.Errorf("the round trip changed the object:\n got %v\nwant %v", obj, in)
			}
			got, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata/golden", tc.name+".yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("%s differs (-update rewrites it):\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// TestConvertDoesNotChangeItsInput: the object converted is often the
// caller's cache's; it must come out as it went in.
func TestConvertDoesNotChangeItsInput(t *testing.T) {
	c := memcached(t, nil)
	in := load(t, "testdata/in/v1.yaml")
	before := deepCopyMap(in)
	out, err := c.Convert(t.Context(), in, v1alpha1)
	if err != nil {
		t.Fatal(err)
	}
	if !equal(in, before) {
		t.Errorf("Convert changed its input: %v, was %v", in, before)
	}
	if _, err := c.Convert(t.Context(), out, v1); err != nil {
		t.Fatal(err)
	}
}

// TestConvertErrors: a template that fails, one that changes what a
// conversion may not, a bomb, a kept annotation too large: each refused
// with an *render.Error naming the template, the budget's error for the
// bomb; a template that changes labels is allowed.
func TestConvertErrors(t *testing.T) {
	const toV1 = "convert.v1alpha1.v1.yaml"
	passBack := `spec: {{ toJson .Spec }}` // v1 -> v1alpha1 as it is
	obj := load(t, "testdata/in/v1alpha1.yaml")
	cases := []struct {
		name     string
		forward  string
		back     string
		budget   render.Budget
		in       map[string]any
		file     string
		line     int
		contains string
		budgetOf string // the render.BudgetError's budget
	}{
		{name: "fails", forward: "spec:\n  replicas: {{ required \"spec.size is required\" .Spec.nothing }}\n", file: toV1, line: 2, contains: "spec.size is required"},
		{name: "changes the name", forward: "metadata:\n  name: other\nspec: {}\n", file: toV1,
			contains: "metadata.name changed: a conversion may change only labels and annotations"},
		{name: "changes the namespace", forward: "{{ $m := deepCopy .Object.metadata }}{{ $_ := set $m \"namespace\" \"x\" }}metadata: {{ toJson $m }}\n", file: toV1,
			contains: "metadata.namespace changed"},
		{name: "drops the uid", forward: "metadata:\n  name: {{ .Name }}\n  namespace: {{ .Namespace }}\n", file: toV1,
			contains: "metadata.uid changed"},
		{name: "wrong apiVersion", forward: "apiVersion: cache.example.com/v2\n", file: toV1, contains: "apiVersion cache.example.com/v2"},
		{name: "wrong kind", forward: "kind: Other\n", file: toV1, contains: "kind Other: a conversion keeps the kind Memcached"},
		{name: "label not a string", forward: "{{ $m := deepCopy .Object.metadata }}{{ $_ := set $m \"labels\" (dict \"n\" 1) }}metadata: {{ toJson $m }}\n", file: toV1,
			contains: `metadata.labels["n"] must be a string`},
		{name: "two documents", forward: "spec: {}\n---\nspec: {}\n", file: toV1, contains: "several documents"},
		{name: "bomb", forward: "spec:\n  x: {{ range until 100000000 }}xxxxxxxx{{ end }}\n", budget: render.Budget{MaxOutputBytes: 1 << 16},
			file: toV1, line: 2, budgetOf: render.BudgetOutput},
		{name: "time bomb", forward: "{{ range until 1000 }}{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}{{ end }}", budget: render.Budget{Timeout: 50e6, MaxCalls: 1 << 40},
			file: toV1, line: -1, budgetOf: render.BudgetTime}, // at the loop, or none when abandoned
		{name: "back fails", forward: "spec: {}\n", back: "{{ fail \"no way back\" }}", file: "convert.v1.v1alpha1.yaml", line: 1, contains: "no way back"},
		{name: "kept over 64 KiB", forward: "spec: {}\n", // v1 holds nothing of v1alpha1's spec
			in: map[string]any{"apiVersion": v1alpha1, "kind": "Memcached", "metadata": map[string]any{"name": "big"},
				"spec": map[string]any{"notes": strings.Repeat("n", MaxKept)}},
			file: toV1, contains: "over the 65536 bytes the annotation operator.tmplop.io/kept-v1alpha1 may take"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			back := tc.back
			if back == "" {
				back = passBack
			}
			c, err := Compile("v1", []string{"v1alpha1"}, nil, map[string]string{toV1: tc.forward, "convert.v1.v1alpha1.yaml": back}, tc.budget)
			if err != nil {
				t.Fatal(err)
			}
			in := tc.in
			if in == nil {
				in = obj
			}
			_, err = c.ConvertList(t.Context(), []map[string]any{in}, v1)
			re, ok := errors.AsType[*render.Error](err)
			if !ok {
				t.Fatalf("err = %v (%T), want a *render.Error", err, err)
			}
			if re.Template != tc.file || (tc.line >= 0 && re.Line != tc.line) {
				t.Errorf("error at %s:%d, want %s:%d (%v)", re.Template, re.Line, tc.file, tc.line, err)
			}
			if tc.contains != "" && !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("err = %v, want it to say %q", err, tc.contains)
			}
			if tc.budgetOf != "" {
				be, ok := errors.AsType[*render.BudgetError](err)
				if !ok || be.Budget != tc.budgetOf {
					t.Errorf("err = %v, want the %s budget's", err, tc.budgetOf)
				}
			}
			if !strings.Contains(err.Error(), "object 0 ("+objectName(in)+")") {
				t.Errorf("err = %v, want it to name the object", err)
			}
		})
	}
}

// TestConvertLabels: a conversion may change labels and annotations (the
// API server's rule), and the round trip still gives back the object.
func TestConvertLabels(t *testing.T) {
	forward := `{{ $m := deepCopy .Object.metadata }}{{ $_ := set $m "labels" (dict "version" "v1") }}metadata: {{ toJson $m }}
spec: {{ toJson .Spec }}`
	back := `{{ $m := deepCopy .Object.metadata }}{{ $_ := unset $m "labels" }}metadata: {{ toJson $m }}
spec: {{ toJson .Spec }}`
	c, err := Compile("v1", []string{"v1alpha1"}, nil, map[string]string{"convert.v1alpha1.v1.yaml": forward, "convert.v1.v1alpha1.yaml": back}, render.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	in := load(t, "testdata/in/v1alpha1.yaml")
	out, err := c.Convert(t.Context(), in, v1)
	if err != nil {
		t.Fatal(err)
	}
	labels, _ := out["metadata"].(map[string]any)["labels"].(map[string]any)
	if len(labels) != 1 || labels["version"] != "v1" {
		t.Errorf("labels %v, want version: v1 alone", labels)
	}
	again, err := c.Convert(t.Context(), out, v1alpha1)
	if err != nil {
		t.Fatal(err)
	}
	if !equal(again, in) {
		t.Errorf("round trip:\n got %v\nwant %v", again, in)
	}
}

// TestConvertLossy: with v1alpha1 lossy, what it cannot hold is dropped,
// not kept.
func TestConvertLossy(t *testing.T) {
	in := load(t, "testdata/in/v1.yaml")
	for _, lossy := range []bool{false, true} {
		c := memcached(t, map[string]bool{"v1alpha1": lossy})
		out, err := c.Convert(t.Context(), in, v1alpha1)
		if err != nil {
			t.Fatal(err)
		}
		_, has := annotations(out)[KeptAnnotation("v1")]
		if has == lossy {
			t.Errorf("lossy %v: kept annotation present %v: %v", lossy, has, annotations(out))
		}
		back, err := c.Convert(t.Context(), out, v1)
		if err != nil {
			t.Fatal(err)
		}
		_, kept := back["spec"].(map[string]any)["maxConnections"]
		if kept == lossy {
			t.Errorf("lossy %v: spec.maxConnections back %v", lossy, kept)
		}
	}
}

// TestCompileErrors: the folder's conversion files are checked against
// its versions: a *render.Error at the file missing or not wanted.
func TestCompileErrors(t *testing.T) {
	both := func(v string) map[string]string {
		return map[string]string{layout.ConversionFile(v, "v1"): "", layout.ConversionFile("v1", v): ""}
	}
	with := func(m map[string]string, name, text string) map[string]string { m[name] = text; return m }
	cases := []struct {
		name      string
		versions  []string
		templates map[string]string
		file      string
		code      string
		contains  string
	}{
		{name: "missing back", versions: []string{"v1alpha1"}, templates: map[string]string{"convert.v1alpha1.v1.yaml": ""},
			file: "convert.v1.v1alpha1.yaml", code: render.CodeFolder, contains: "version v1alpha1 needs a conversion to the hub v1 and one from it"},
		{name: "missing both", versions: []string{"v1alpha1", "v1beta1"}, templates: both("v1alpha1"),
			file: "convert.v1beta1.v1.yaml", code: render.CodeFolder},
		{name: "unknown version", versions: []string{"v1alpha1"}, templates: with(both("v1alpha1"), "convert.v2.v1.yaml", ""),
			file: "convert.v2.v1.yaml", code: render.CodeFolder, contains: "version v2 is not a version of the kind (v1, v1alpha1)"},
		{name: "between two non-hub versions", versions: []string{"v1alpha1", "v1beta1"},
			templates: with(with(both("v1alpha1"), "convert.v1beta1.v1.yaml", ""), "convert.v1alpha1.v1beta1.yaml", ""),
			file:      "convert.v1alpha1.v1beta1.yaml", code: render.CodeFolder, contains: "neither v1alpha1 nor v1beta1 is the hub v1"},
		{name: "to itself", versions: []string{"v1alpha1"}, templates: with(both("v1alpha1"), "convert.v1.v1.yaml", ""),
			file: "convert.v1.v1.yaml", code: render.CodeFolder, contains: "to itself"},
		{name: "not a conversion", versions: []string{"v1alpha1"}, templates: with(both("v1alpha1"), "deployment.yaml", ""),
			file: "deployment.yaml", code: render.CodeFolder},
		{name: "parse", versions: []string{"v1alpha1"}, templates: with(both("v1alpha1"), "convert.v1alpha1.v1.yaml", "a: 1\n{{ if }}\n"),
			file: "convert.v1alpha1.v1.yaml", code: render.CodeParse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile("v1", tc.versions, nil, tc.templates, render.Budget{})
			re, ok := errors.AsType[*render.Error](err)
			if !ok {
				t.Fatalf("err = %v (%T), want a *render.Error", err, err)
			}
			if re.Template != tc.file || re.Code != tc.code {
				t.Errorf("got %s %s, want %s %s (%v)", re.Template, re.Code, tc.file, tc.code, err)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("err = %v, want it to say %q", err, tc.contains)
			}
		})
	}
}

// TestConvertList: a list converts in order, on several goroutines, all
// or nothing: the error is the first failing object's, in the list's
// order, and a canceled context stops it.
func TestConvertList(t *testing.T) {
	c := memcached(t, nil)
	in := load(t, "testdata/in/v1alpha1.yaml")
	objs := make([]map[string]any, 200)
	for i := range objs {
		o := deepCopyMap(in)
		o["metadata"].(map[string]any)["name"] = fmt.Sprintf("m%d", i)
		o["spec"].(map[string]any)["size"] = int64(i)
		objs[i] = o
	}
	out, err := c.ConvertList(t.Context(), objs, v1)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if o["metadata"].(map[string]any)["name"] != fmt.Sprintf("m%d", i) || o["spec"].(map[string]any)["replicas"] != int64(i) {
			t.Fatalf("object %d: %v", i, o)
		}
	}
	// Objects 150 and 60 are at a version the kind does not have.
	objs[150]["apiVersion"], objs[60]["apiVersion"] = "cache.example.com/v9", "cache.example.com/v9"
	if _, err := c.ConvertList(t.Context(), objs, v1); err == nil || !strings.HasPrefix(err.Error(), "object 60 (demo/m60): ") {
		t.Errorf("err = %v, want object 60's", err)
	}
	objs[150]["apiVersion"], objs[60]["apiVersion"] = v1alpha1, v1alpha1
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.ConvertList(ctx, objs, v1); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: err = %v, want context.Canceled", err)
	}
}

// TestKeptForged: whoever writes an object may write its kept annotation:
// one that is not JSON, or that names what a conversion may not change
// (apiVersion, kind, metadata but labels and annotations), or a label
// that is not a string, is ignored, never an error (a ConversionReview is
// all or nothing: one object that fails, fails every list); the rest of
// it applies.
func TestKeptForged(t *testing.T) {
	c := memcached(t, nil)
	in := load(t, "testdata/in/v1alpha1.yaml")
	for name, kept := range map[string]string{
		"not JSON":     `{"set": `,
		"not a string": "",
		"forged": `{"set":{"/apiVersion":"x/v9","/kind":"Other","/metadata/name":"other","/metadata/uid":"u2","/metadata/labels/n":1,` +
			`"/metadata/labels/ok":"yes","/metadata/annotations/operator.tmplop.io~1kept-v1alpha1":"{}","/spec/maxConnections":7},"absent":["/metadata/namespace","/metadata","/kind"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			obj := deepCopyMap(in)
			ann := map[string]any{KeptAnnotation("v1"): kept}
			if name == "not a string" {
				ann[KeptAnnotation("v1")] = int64(1)
			}
			obj["metadata"].(map[string]any)["annotations"] = ann
			out, err := c.Convert(t.Context(), obj, v1)
			if err != nil {
				t.Fatal(err)
			}
			meta := out["metadata"].(map[string]any)
			if out["apiVersion"] != v1 || out["kind"] != "Memcached" || meta["name"] != "cache" || meta["namespace"] != "demo" || meta["uid"] != in["metadata"].(map[string]any)["uid"] {
				t.Errorf("the kept annotation changed what it may not: %v", out)
			}
			if _, ok := meta["labels"].(map[string]any)["n"]; ok {
				t.Errorf("a label that is not a string was set: %v", meta["labels"])
			}
			if k := annotations(out)[KeptAnnotation("v1alpha1")]; k == "{}" {
				t.Errorf("a forged kept annotation was kept: %v", annotations(out))
			}
			if name == "forged" {
				if out["spec"].(map[string]any)["maxConnections"] != int64(7) || meta["labels"].(map[string]any)["ok"] != "yes" {
					t.Errorf("the rest of the annotation did not apply: %v", out)
				}
			}
		})
	}
}
