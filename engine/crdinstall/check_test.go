package crdinstall

import (
	"errors"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func props(t *testing.T, y string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	if y == "" {
		return nil
	}
	var s apiextensionsv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(y), &s); err != nil {
		t.Fatalf("schema %q: %v", y, err)
	}
	return &s
}

func object(t *testing.T, y string) map[string]any {
	t.Helper()
	var o map[string]any
	if err := yaml.Unmarshal([]byte(y), &o); err != nil {
		t.Fatalf("object %q: %v", y, err)
	}
	return o
}

func crd(t *testing.T, y string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(y), &c); err != nil {
		t.Fatalf("crd %q: %v", y, err)
	}
	return &c
}

const base = `
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  spec:
    type: object
    properties:
      replicas: {type: integer}
      image: {type: string}
      resources:
        type: object
        properties:
          cpu: {type: string}
          memory: {type: string}
      ports:
        type: array
        items:
          type: object
          properties:
            name: {type: string}
            port: {type: integer}
      labels:
        type: object
        additionalProperties: {type: string}
  status:
    type: object
    properties:
      ready: {type: integer}
`

func TestRemovedFieldsAndFindRemoved(t *testing.T) {
	cases := []struct {
		name     string
		old      string
		next     string
		want     []string // RemovedFields
		obj      string
		wantPath string // FindRemoved(obj)
	}{
		{name: "same schema", old: base, next: base,
			obj: `{spec: {replicas: 1, ports: [{name: a}]}}`},
		{name: "field added", old: base,
			next: strings.Replace(base, "      image: {type: string}\n", "      image: {type: string}\n      tag: {type: string}\n", 1),
			obj:  `{spec: {replicas: 1}}`},
		{name: "field removed, set", old: base,
			next:     strings.Replace(base, "      replicas: {type: integer}\n", "", 1),
			want:     []string{"spec.replicas"},
			obj:      `{spec: {replicas: 3, image: x}}`,
			wantPath: "spec.replicas"},
		{name: "field removed, not set", old: base,
			next: strings.Replace(base, "      replicas: {type: integer}\n", "", 1),
			want: []string{"spec.replicas"},
			obj:  `{spec: {image: x}}`},
		{name: "field removed, set to null", old: base,
			next:     strings.Replace(base, "      replicas: {type: integer}\n", "", 1),
			want:     []string{"spec.replicas"},
			obj:      `{spec: {replicas: null}}`,
			wantPath: "spec.replicas"},
		{name: "nested field removed", old: base,
			next:     strings.Replace(base, "          memory: {type: string}\n", "", 1),
			want:     []string{"spec.resources.memory"},
			obj:      `{spec: {resources: {cpu: "1", memory: 1Gi}}}`,
			wantPath: "spec.resources.memory"},
		{name: "nested object removed", old: base,
			next: strings.Replace(base, `      resources:
        type: object
        properties:
          cpu: {type: string}
          memory: {type: string}
`, "", 1),
			want:     []string{"spec.resources"},
			obj:      `{spec: {resources: {}}}`,
			wantPath: "spec.resources"},
		{name: "field of array items removed", old: base,
			next:     strings.Replace(base, "            name: {type: string}\n", "", 1),
			want:     []string{"spec.ports[].name"},
			obj:      `{spec: {ports: [{port: 80}, {port: 81, name: b}]}}`,
			wantPath: "spec.ports[1].name"},
		{name: "field of array items removed, no item sets it", old: base,
			next: strings.Replace(base, "            name: {type: string}\n", "", 1),
			want: []string{"spec.ports[].name"},
			obj:  `{spec: {ports: [{port: 80}]}}`},
		{name: "map turned into an object", old: base,
			next:     strings.Replace(base, "        additionalProperties: {type: string}\n", "        properties:\n          app: {type: string}\n", 1),
			want:     []string{"spec.labels.*"},
			obj:      `{spec: {labels: {app: a, tier: b}}}`,
			wantPath: "spec.labels.tier"},
		{name: "status field removed", old: base,
			next:     strings.Replace(base, "      ready: {type: integer}\n", "", 1),
			want:     []string{"status.ready"},
			obj:      `{status: {ready: 1}}`,
			wantPath: "status.ready"},
		{name: "field removed where next preserves unknown fields", old: base,
			next: strings.Replace(strings.Replace(base, "      replicas: {type: integer}\n", "", 1), "  spec:\n    type: object\n", "  spec:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n", 1),
			obj:  `{spec: {replicas: 3}}`},
		{name: "spec turned into preserve-unknown-fields", old: base,
			next: "type: object\nproperties:\n  spec:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n  status:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n",
			obj:  `{spec: {replicas: 3, ports: [{name: a}]}, status: {ready: 1}}`},
		{name: "preserve-unknown-fields dropped", old: "type: object\nproperties:\n  spec:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n    properties:\n      replicas: {type: integer}\n",
			next:     "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      replicas: {type: integer}\n",
			want:     []string{"spec.*"},
			obj:      `{spec: {replicas: 3, extra: {a: 1}}}`,
			wantPath: "spec.extra"},
		{name: "preserve-unknown-fields dropped, only declared fields set",
			old:  "type: object\nproperties:\n  spec:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n    properties:\n      replicas: {type: integer}\n",
			next: "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      replicas: {type: integer}\n",
			want: []string{"spec.*"},
			obj:  `{spec: {replicas: 3}}`},
		{name: "preserve-unknown-fields replaced by a schema",
			old:      "type: object\nproperties:\n  spec:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n",
			next:     "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      replicas: {type: integer}\n      nested:\n        type: object\n        properties:\n          a: {type: string}\n      list:\n        type: array\n        items:\n          type: object\n          properties:\n            n: {type: string}\n",
			want:     []string{"spec.*", "spec.list[].*", "spec.nested.*"},
			obj:      `{spec: {replicas: 3, nested: {a: x, b: y}}}`,
			wantPath: "spec.nested.b"},
		{name: "preserve-unknown-fields replaced by a schema, unknown field in array items",
			old:      "type: object\nproperties:\n  spec:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n",
			next:     "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      list:\n        type: array\n        items:\n          type: object\n          properties:\n            n: {type: string}\n",
			want:     []string{"spec.*", "spec.list[].*"},
			obj:      `{spec: {list: [{n: a}, {n: b, m: c}]}}`,
			wantPath: "spec.list[1].m"},
		{name: "unknown fields under a preserved field, nested", old: "type: object\nproperties:\n  spec:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n",
			next: "type: object\nproperties:\n  spec:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n    properties:\n      replicas: {type: integer}\n",
			obj:  `{spec: {replicas: 3, a: {b: [1, 2]}}}`},
		{name: "whole spec removed", old: base,
			next:     "type: object\nproperties:\n  status:\n    type: object\n    properties:\n      ready: {type: integer}\n",
			want:     []string{"spec"},
			obj:      `{spec: {image: x}}`,
			wantPath: "spec"},
		{name: "metadata is the API server's", old: base,
			next: "type: object\nproperties:\n  spec:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n  status:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n",
			obj:  `{apiVersion: a/v1, kind: A, metadata: {name: x, labels: {a: b}}}`},
		{name: "no schema before", old: "",
			next:     "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      replicas: {type: integer}\n",
			want:     []string{"*", "spec.*"},
			obj:      `{metadata: {name: x}, spec: {replicas: 1, other: 2}}`,
			wantPath: "spec.other"},
		{name: "embedded resource", old: "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      template:\n        type: object\n        x-kubernetes-embedded-resource: true\n        properties:\n          spec:\n            type: object\n            properties:\n              a: {type: string}\n              b: {type: string}\n",
			next:     "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      template:\n        type: object\n        x-kubernetes-embedded-resource: true\n        properties:\n          spec:\n            type: object\n            properties:\n              a: {type: string}\n",
			want:     []string{"spec.template.spec.b"},
			obj:      `{spec: {template: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {a: x, b: y}}}}`,
			wantPath: "spec.template.spec.b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, next := props(t, tc.old), props(t, tc.next)
			if got := RemovedFields(old, next); !slices.Equal(got, tc.want) {
				t.Errorf("RemovedFields = %q, want %q", got, tc.want)
			}
			if got := FindRemoved(object(t, tc.obj), old, next); got != tc.wantPath {
				t.Errorf("FindRemoved = %q, want %q", got, tc.wantPath)
			}
		})
	}
}

const liveCRD = `
metadata: {name: widgets.a.example.com}
spec:
  group: a.example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
              image: {type: string}
              size: {type: integer}
  - name: v1beta1
    served: false
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
  - name: v1alpha1
    served: false
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
status:
  storedVersions: [v1beta1, v1]
`

func TestDroppedVersions(t *testing.T) {
	live := crd(t, liveCRD)
	cases := []struct {
		name     string
		versions []string
		want     []string
	}{
		{"all kept", []string{"v1", "v1beta1", "v1alpha1"}, nil},
		{"neither served nor stored dropped", []string{"v1", "v1beta1"}, nil},
		{"version added", []string{"v2", "v1", "v1beta1"}, nil},
		{"served version dropped", []string{"v2", "v1beta1"}, []string{"v1"}},
		{"stored version dropped", []string{"v1"}, []string{"v1beta1"}},
		{"all dropped", []string{"v2"}, []string{"v1", "v1beta1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := live.DeepCopy()
			next.Spec.Versions = nil
			for _, v := range tc.versions {
				next.Spec.Versions = append(next.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true})
			}
			if got := DroppedVersions(live, next); !slices.Equal(got, tc.want) {
				t.Errorf("DroppedVersions = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	live := crd(t, liveCRD)
	objs := []unstructured.Unstructured{
		{Object: object(t, `{apiVersion: a.example.com/v1, kind: Widget, metadata: {name: w1, namespace: ns1}, spec: {image: x}}`)},
		{Object: object(t, `{apiVersion: a.example.com/v1, kind: Widget, metadata: {name: w2, namespace: ns2}, spec: {replicas: 2}}`)},
	}
	without := func(field string) *apiextensionsv1.CustomResourceDefinition {
		next := live.DeepCopy()
		delete(next.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties, field)
		return next
	}
	cases := []struct {
		name    string
		next    *apiextensionsv1.CustomResourceDefinition
		listErr error
		wantErr string // "" for none; else a substring
		refused bool
		lists   int
	}{
		{name: "unchanged", next: live.DeepCopy()},
		{name: "field used by an object removed", next: without("replicas"), lists: 1, refused: true,
			wantErr: "version v1 of the new CRD removes field spec.replicas, which object ns2/w2 sets"},
		{name: "field used by no object removed", next: func() *apiextensionsv1.CustomResourceDefinition {
			n := without("size")
			n.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["tag"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
			return n
		}(), lists: 1},
		{name: "stored version dropped", next: func() *apiextensionsv1.CustomResourceDefinition {
			n := live.DeepCopy()
			n.Spec.Versions = n.Spec.Versions[:1]
			return n
		}(), refused: true, wantErr: "it drops version v1beta1"},
		{name: "list fails", next: without("replicas"), listErr: errors.New("forbidden"), lists: 1, wantErr: "forbidden"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lists := 0
			err := Check(live, tc.next, func(version string) ([]unstructured.Unstructured, error) {
				lists++
				if version != "v1" {
					t.Errorf("listed at %s, want v1", version)
				}
				return objs, tc.listErr
			})
			if lists != tc.lists {
				t.Errorf("listed %d times, want %d", lists, tc.lists)
			}
			var refused *RefusedError
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Check = %v, want an error with %q", err, tc.wantErr)
			case errors.As(err, &refused) != tc.refused:
				t.Fatalf("Check = %v (%T), refused %v", err, err, tc.refused)
			}
			t.Logf("%v", err)
		})
	}
}
