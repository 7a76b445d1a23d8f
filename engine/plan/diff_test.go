package plan

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestPaths(t *testing.T) {
	tests := map[string]struct {
		before, after map[string]any
		want          []string
	}{
		"same": {
			before: map[string]any{"a": int64(1), "b": []any{"x"}},
			after:  map[string]any{"a": int64(1), "b": []any{"x"}},
		},
		"a value": {
			before: map[string]any{"spec": map[string]any{"replicas": int64(1)}},
			after:  map[string]any{"spec": map[string]any{"replicas": int64(2)}},
			want:   []string{".spec.replicas"},
		},
		"a label added, one removed": {
			before: map[string]any{"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "a"}}},
			after:  map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "big"}}},
			want:   []string{".metadata.labels.tier", `.metadata.labels["app.kubernetes.io/name"]`},
		},
		"a list element": {
			before: map[string]any{"l": []any{map[string]any{"n": "a"}, map[string]any{"n": "b"}}},
			after:  map[string]any{"l": []any{map[string]any{"n": "a"}, map[string]any{"n": "c"}}},
			want:   []string{".l[1].n"},
		},
		"a list grown": {
			before: map[string]any{"l": []any{"a"}},
			after:  map[string]any{"l": []any{"a", "b"}},
			want:   []string{".l"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Paths(tc.before, tc.after); !slices.Equal(got, tc.want) {
				t.Errorf("Paths = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClean(t *testing.T) {
	obj := map[string]any{
		"kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "uid": "u", "resourceVersion": "7", "generation": int64(2),
			"creationTimestamp": "t", "managedFields": []any{"m"}, "labels": map[string]any{"a": "b"}},
		"status": map[string]any{"x": "y"},
	}
	got := Clean(obj)
	want := []string{".metadata.creationTimestamp", ".metadata.generation", ".metadata.managedFields", ".metadata.resourceVersion", ".metadata.uid", ".status"}
	if p := Paths(obj, got); !slices.Equal(p, want) {
		t.Errorf("Clean removed %q, want %q", p, want)
	}
	if _, ok := obj["status"]; !ok {
		t.Error("Clean changed its argument")
	}
}

func TestUnified(t *testing.T) {
	tests := map[string]struct {
		before, after map[string]any
		want          string
	}{
		"same": {
			before: map[string]any{"a": "1"}, after: map[string]any{"a": "1"},
		},
		"one line changed amid context": {
			before: map[string]any{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7", "h": "8", "i": "9"},
			after:  map[string]any{"a": "1", "b": "2", "c": "3", "d": "4", "e": "X", "f": "6", "g": "7", "h": "8", "i": "9"},
			want:   "--- a/x\n+++ b/x\n@@ -2,7 +2,7 @@\n b: \"2\"\n c: \"3\"\n d: \"4\"\n-e: \"5\"\n+e: X\n f: \"6\"\n g: \"7\"\n h: \"8\"\n",
		},
		"created": {
			after: map[string]any{"a": "1"},
			want:  "--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a: \"1\"\n",
		},
		"deleted": {
			before: map[string]any{"a": "1", "b": "2"},
			want:   "--- a/x\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a: \"1\"\n-b: \"2\"\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Unified("x", tc.before, tc.after)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Unified =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	live := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"a": "1"}},
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": "old", "imagePullPolicy": "IfNotPresent"}},
			"ports":      []any{int64(80)},
		},
	}
	desired := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"b": "2"}},
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": "new"}},
			"ports":      []any{int64(80), int64(443)},
		},
	}
	merge(live, desired)
	want := []string{".metadata.labels.b", ".spec.containers[0].image", ".spec.ports"}
	orig := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"a": "1"}},
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": "old", "imagePullPolicy": "IfNotPresent"}},
			"ports":      []any{int64(80)},
		},
	}
	if got := Paths(orig, live); !slices.Equal(got, want) {
		t.Errorf("merge changed %q, want %q (the defaulted imagePullPolicy and the other label kept)", got, want)
	}
}

func TestMaskSecrets(t *testing.T) {
	before := map[string]any{"kind": "Secret", "data": map[string]any{"same": "c2FtZQ==", "changed": "b2xk", "gone": "eA=="}}
	after := map[string]any{"kind": "Secret", "data": map[string]any{"same": "c2FtZQ==", "changed": "bmV3", "new": "eQ=="}}
	b, a := maskSecrets("Secret", "v1", before, after)
	wantB := map[string]any{"same": "***", "changed": "*** (before)", "gone": "*** (before)"}
	wantA := map[string]any{"same": "***", "changed": "*** (after)", "new": "*** (after)"}
	if !reflect.DeepEqual(b["data"], wantB) || !reflect.DeepEqual(a["data"], wantA) {
		t.Errorf("masked = %v, %v; want %v, %v", b["data"], a["data"], wantB, wantA)
	}
	if before["data"].(map[string]any)["changed"] != "b2xk" {
		t.Error("maskSecrets changed its argument")
	}
	d, err := Unified("s", b, a)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"c2FtZQ==", "b2xk", "bmV3", "eA==", "eQ=="} {
		if strings.Contains(d, secret) {
			t.Errorf("the diff shows the value %s:\n%s", secret, d)
		}
	}
	created, _ := maskSecrets("Secret", "v1", nil, after)
	if created != nil {
		t.Errorf("a created Secret's before = %v, want nil", created)
	}
	cm := map[string]any{"kind": "ConfigMap", "data": map[string]any{"a": "1"}}
	if got, _ := maskSecrets("ConfigMap", "v1", cm, nil); got["data"].(map[string]any)["a"] != "1" {
		t.Error("a ConfigMap's data was masked")
	}
}
