package catalog

import (
	"reflect"
	"slices"
	"testing"

	"github.com/tmplop/operator/engine/layout"
)

// TestVersions: a folder's versions resolved from kind.yaml or crd.yaml:
// the hub first when not listed, defaults applied, one storage version;
// the conversions compiled into Converter, and never read as children.
func TestVersions(t *testing.T) {
	const head = "apiVersion: cache.example.com/v1\nkind: Memcached\n"
	conversions := layout.Files{
		"convert.v1alpha1.v1.yaml": []byte("spec: {replicas: {{ .Spec.size }}}\n"),
		"convert.v1.v1alpha1.yaml": []byte("spec: {size: {{ .Spec.replicas }}}\n"),
	}
	with := func(files layout.Files) layout.Files {
		for k, v := range conversions {
			files[k] = v
		}
		return files
	}
	cases := []struct {
		name      string
		files     layout.Files
		want      []Version
		storage   string
		converter bool
	}{
		{name: "one version", files: layout.Files{KindFile: []byte(head), "a.yaml": []byte("")},
			want: []Version{{Name: "v1", Served: true, Storage: true, Hub: true}}, storage: "v1"},
		{name: "hub not listed", files: with(layout.Files{KindFile: []byte(head + "versions:\n- name: v1alpha1\n  deprecated: true\n  deprecationWarning: use v1\n  lossy: true\n")}),
			want: []Version{
				{Name: "v1", Served: true, Storage: true, Hub: true},
				{Name: "v1alpha1", Served: true, Deprecated: true, DeprecationWarning: "use v1", Lossy: true},
			}, storage: "v1", converter: true},
		{name: "old version stored", files: with(layout.Files{KindFile: []byte(head + "versions:\n- name: v1alpha1\n  storage: true\n- name: v1\n")}),
			want: []Version{
				{Name: "v1alpha1", Served: true, Storage: true},
				{Name: "v1", Served: true, Hub: true},
			}, storage: "v1alpha1", converter: true},
		{name: "not served", files: with(layout.Files{KindFile: []byte(head + "versions:\n- name: v1\n  storage: true\n- name: v1alpha1\n  served: false\n")}),
			want: []Version{
				{Name: "v1", Served: true, Storage: true, Hub: true},
				{Name: "v1alpha1"},
			}, storage: "v1", converter: true},
		{name: "crd.yaml's versions", files: with(layout.Files{KindFile: []byte(head), CRDFile: []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  versions:
  - name: v1alpha1
    served: true
    storage: true
    deprecated: true
  - name: v1
    served: true
`)}),
			want: []Version{
				{Name: "v1alpha1", Served: true, Storage: true, Deprecated: true},
				{Name: "v1", Served: true, Hub: true},
			}, storage: "v1alpha1", converter: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := Compile("m", "m", tc.files)
			if err != nil {
				t.Fatal(err)
			}
			if got := k.Versions(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Versions() = %+v\nwant %+v", got, tc.want)
			}
			if k.Hub() != "v1" || k.StorageVersion() != tc.storage {
				t.Errorf("Hub() = %s, StorageVersion() = %s, want v1, %s", k.Hub(), k.StorageVersion(), tc.storage)
			}
			if (k.Converter() != nil) != tc.converter {
				t.Fatalf("Converter() = %v, want one: %v", k.Converter(), tc.converter)
			}
			for name := range conversions {
				if slices.Contains(k.Templates.ChildTemplates(), name) {
					t.Errorf("%s is a child template", name)
				}
			}
			if !tc.converter {
				return
			}
			obj := map[string]any{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
				"metadata": map[string]any{"name": "m"}, "spec": map[string]any{"size": int64(2)}}
			out, err := k.Converter().Convert(t.Context(), obj, "cache.example.com/v1")
			if err != nil {
				t.Fatal(err)
			}
			if r := out["spec"].(map[string]any)["replicas"]; r != int64(2) {
				t.Errorf("spec.replicas = %v, want 2", r)
			}
		})
	}
}

// TestVersionSchemas: a version's short schema is parsed once at load;
// the hub's is kind.yaml's top-level one.
func TestVersionSchemas(t *testing.T) {
	k, err := Compile("m", "m", layout.Files{
		KindFile:                   []byte("apiVersion: cache.example.com/v1\nkind: Memcached\nspec: {replicas: integer}\nversions:\n- name: v1alpha1\n  spec: {size: integer}\n  printerColumns: [{name: Size, type: integer, jsonPath: .spec.size}]\n"),
		"convert.v1alpha1.v1.yaml": []byte(""), "convert.v1.v1alpha1.yaml": []byte(""),
	})
	if err != nil {
		t.Fatal(err)
	}
	spec, status, cols := k.VersionSchemas("v1alpha1")
	if _, ok := spec.Properties["size"]; !ok || status != nil || len(cols) != 1 {
		t.Errorf("v1alpha1: spec %v, status %v, columns %v", spec, status, cols)
	}
	spec, _, _ = k.VersionSchemas("v1")
	if _, ok := spec.Properties["replicas"]; !ok {
		t.Errorf("v1: spec %v, want the top-level one", spec)
	}
}
