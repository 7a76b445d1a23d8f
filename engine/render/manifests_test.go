package render

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSplitDocuments(t *testing.T) {
	tests := []struct {
		out  string
		want []string // "line:text" of each document
	}{
		{"a: 1\n", []string{"1:a: 1\n"}},
		{"a: 1\n---\nb: 2", []string{"1:a: 1\n", "3:b: 2"}},
		{"---\na: 1\n---\n", []string{"1:", "2:a: 1\n"}},
		{"a: 1\r\n---\r\nb: 2\r\n", []string{"1:a: 1\r\n", "3:b: 2\r\n"}},
		{"a: 1\n--- # next\nb: 2\n", []string{"1:a: 1\n", "3:b: 2\n"}},
		{"a: 1\n---  b: 2\nc: 3\n", []string{"1:a: 1\n", "2:b: 2\nc: 3\n"}},
		{"a: |\n  x\n----\n---x\n  ---\n", []string{"1:a: |\n  x\n----\n---x\n  ---\n"}},
		{"", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, d := range SplitDocuments([]byte(tt.out)) {
			got = append(got, fmt.Sprintf("%d:%s", d.Line, d.Text))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("SplitDocuments(%q) = %q, want %q", tt.out, got, tt.want)
		}
	}
}

func TestBlank(t *testing.T) {
	for doc, want := range map[string]bool{
		"":                  true,
		"  \n\t\n":          true,
		"# a\n  # b\r\n":    true,
		"# a\nkey: v\n":     false,
		"null":              false, // decoded, then skipped as no object
		"  key: v # note\n": false,
	} {
		if got := Blank([]byte(doc)); got != want {
			t.Errorf("Blank(%q) = %v, want %v", doc, got, want)
		}
	}
}

func TestCheckManifest(t *testing.T) {
	cm := func(meta map[string]any) map[string]any {
		meta["name"] = "a"
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
	}
	for _, tc := range []struct {
		obj  map[string]any
		want string // fragment of the message; "" for none
	}{
		{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}, ""},
		{map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}, "apiVersion is required"},
		{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"generateName": "a-"}}, "generateName is not supported"},
		// A List would send the mapper rediscovering every API group.
		{map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"name": "l"}, "items": []any{}}, "kind List is a list of objects"},
		// The API server refuses what is no string; a null it stores as "".
		{cm(map[string]any{"labels": map[string]any{"a": "b", "c": nil}, "annotations": nil}), ""},
		{cm(map[string]any{"annotations": map[string]any{"prometheus.io/port": int64(8080)}}), `ConfigMap a: metadata.annotations["prometheus.io/port"] must be a string, got a number (8080): quote it`},
		{cm(map[string]any{"labels": map[string]any{"on": true}}), `metadata.labels["on"] must be a string, got a boolean (true)`},
		{cm(map[string]any{"annotations": map[string]any{"x": map[string]any{}}}), `metadata.annotations["x"] must be a string, got a mapping`},
		{cm(map[string]any{"labels": []any{"a"}}), "metadata.labels must be a mapping of strings, got a list"},
	} {
		got := checkManifest(tc.obj)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("checkManifest(%v) = %q, want %q", tc.obj, got, tc.want)
		}
		if got == "" {
			if _, err := (&unstructured.Unstructured{Object: tc.obj}).MarshalJSON(); err != nil {
				t.Errorf("checkManifest(%v) passed what does not encode: %v", tc.obj, err)
			}
			u := unstructured.Unstructured{Object: tc.obj}
			if _, _, err := unstructured.NestedStringMap(u.Object, "metadata", "labels"); err != nil {
				t.Errorf("checkManifest passed labels that are not strings: %v", err)
			}
		}
	}
}

// TestAliasBomb: a document whose aliases expand far beyond its size (a
// tenant's string printed by tpl) is refused, not decoded.
func TestAliasBomb(t *testing.T) {
	// 4000 values used 90 times: few enough aliases for yaml.v2's own
	// check, 360,000 values and 60 MB from 8 KB.
	bomb := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\na: &a [" + strings.Repeat("x,", 3999) + "x]\nb: [" + strings.Repeat("*a,", 89) + "*a]\n"
	start := time.Now()
	_, err := appendManifests(nil, "a.yaml", []byte(bomb))
	if err == nil || !strings.Contains(err.Error(), "aliases expand to more than") {
		t.Fatalf("err = %v, want the aliases refused", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s", d)
	}
	ms, err := appendManifests(nil, "a.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  a: &v value\n  b: *v\n"))
	if err != nil || ms[0].Object.Object["data"].(map[string]any)["b"] != "value" {
		t.Fatalf("a document with a few aliases: %v, %v", ms, err)
	}
}
