package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// FuzzRender: any template text, over any object, parses or fails to,
// renders or fails to, within its budget and without a panic escaping.
// The seed corpus is in testdata/fuzz/FuzzRender; `make fuzz` runs it
// for longer.
func FuzzRender(f *testing.F) {
	for _, seed := range []struct{ tmpl, obj string }{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n", "metadata: {name: a}"},
		{"{{ range .Spec.items }}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ . }}\n{{ end }}", "spec: {items: [a, b]}"},
		{`{{ tpl .Spec.t . }}`, `spec: {t: "{{ range until 100 }}x{{ end }}"}`},
		{`{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}`, "{}"},
		{`{{ $d := dict }}{{ $_ := set $d "a" $d }}{{ toYaml $d }}`, "{}"},
		{"--- a: 1\n---\n- b\n", "{}"},
		{`{{ printf "%*.*f" .Spec.w .Spec.p 1.5 }}`, "spec: {w: 5, p: 2}"},
		{`{{ .Spec | toJson | fromJson | toYaml | nindent 2 }}`, "spec: {a: [1, {b: null}]}"},
		// The same children from every render: maps' keys in yaml.v2's
		// order that is none, sprig's keys and values in a map's random
		// order, a random number.
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: {{ toYaml .Spec | quote }}\n", "spec: {'1': a, 0C2: b, 001A: c}"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: {{ toYamlPretty .Spec | quote }}\n", "spec: {'1': a, 0C2: b, 001A: c}"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: {{ keys .Spec | join \",\" | quote }}\n", "spec: {a: 1, b: 2, c: 3, d: 4}"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: {{ values .Spec | toJson | quote }}\n", "spec: {a: 1, b: 2, c: 3, d: 4}"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: {{ randInt 0 1000000 | quote }}\n", "{}"},
	} {
		f.Add(seed.tmpl, seed.obj)
	}
	f.Fuzz(func(t *testing.T, tmpl, obj string) {
		set, err := Parse(map[string]string{"a.yaml": tmpl, "status.yaml": tmpl})
		if err != nil {
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("parse error is not an *Error: %T %v", err, err)
			}
			return
		}
		var o map[string]any
		if yaml.Unmarshal([]byte(obj), &o) != nil {
			o = nil
		}
		b := Budget{Timeout: 100 * time.Millisecond, MaxOutputBytes: 1 << 20, MaxManifests: 50, MaxCalls: 1000}
		in := Input{Object: o, Budget: b, Now: time.Unix(0, 0)}
		res, err := set.Children(t.Context(), in)
		if err == nil {
			for _, m := range res.Manifests {
				if m.Object.GetKind() == "" || m.Object.GetName() == "" {
					t.Fatalf("manifest without kind or name: %v", m.Object)
				}
			}
			// A render that calls none of the functions it reports as
			// nondeterministic prints the same children every time: one
			// that did not would rewrite them at every reconcile.
			if len(res.Nondeterministic) == 0 {
				again, err := set.Children(t.Context(), in)
				if err == nil && manifestsJSON(t, again) != manifestsJSON(t, res) {
					t.Fatalf("two renders differ:\n%s\n%s", manifestsJSON(t, res), manifestsJSON(t, again))
				}
			}
		} else if !errors.As(err, new(*Error)) {
			t.Fatalf("render error is not an *Error: %T %v", err, err)
		}
		if _, err := set.Status(t.Context(), in); err != nil && !errors.As(err, new(*Error)) {
			t.Fatalf("status error is not an *Error: %T %v", err, err)
		}
	})
}

// FuzzManifests: any template output splits and decodes into manifests
// that can be applied, or into an error naming the document.
func FuzzManifests(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		"---\n---\n# only a comment\n---\nnull\n",
		"--- apiVersion: v1\nkind: A\nmetadata: {name: x}\n",
		"a: &x [*x]\n",
		"- 1\n- 2\n",
		"apiVersion: v1\nkind: List\nitems: []\nmetadata: {name: l}\n",
		"{\"apiVersion\":\"v1\",\"kind\":\"A\",\"metadata\":{\"name\":1e400}}",
		"apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  labels: {a: ~, b: n}\n  annotations:\n    x: 8080\n",
		"apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  labels:\n  annotations: null\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		ms, err := appendManifests(nil, "a.yaml", out)
		if err != nil {
			if !errors.As(err, new(*Error)) {
				t.Fatalf("error is not an *Error: %T %v", err, err)
			}
			return
		}
		for _, m := range ms {
			if msg := checkManifest(m.Object.Object); msg != "" {
				t.Fatalf("accepted a manifest that cannot be applied: %s", msg)
			}
			// What the engine reads of labels and annotations (a Helm
			// hook, an owner label) is what the API server stores.
			for _, field := range []string{"labels", "annotations"} {
				if v, _, _ := unstructured.NestedFieldNoCopy(m.Object.Object, "metadata", field); v == nil {
					continue // absent or null: none
				}
				if _, _, err := unstructured.NestedStringMap(m.Object.Object, "metadata", field); err != nil {
					t.Fatalf("accepted %s that are not strings: %v", field, err)
				}
			}
		}
		_, _ = decodeStatus(out)
	})
}

// manifestsJSON is what a render applies, as text to compare.
func manifestsJSON(t *testing.T, res *Result) string {
	t.Helper()
	var b strings.Builder
	for _, m := range res.Manifests {
		j, err := json.Marshal(m.Object.Object)
		if err != nil {
			t.Fatalf("a manifest that is no JSON: %v", err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}
