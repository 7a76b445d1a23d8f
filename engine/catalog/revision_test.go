package catalog

import (
	"testing"

	"github.com/tmplop/operator/engine/layout"
)

// TestRecordsRevision: the objects of a kind hold status.observedRevision
// when the engine generates the CRD, or when the folder's crd.yaml keeps it
// at the watched version; never for a built-in kind.
func TestRecordsRevision(t *testing.T) {
	crd := func(version, status string) string {
		return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.a.example.com}
spec:
  group: a.example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: ` + version + `
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object}
` + status
	}
	for _, tc := range []struct {
		name string
		kind string
		crd  string
		want bool
	}{
		{name: "generated CRD", kind: "apiVersion: a.example.com/v1\nkind: Widget\n", want: true},
		{name: "built-in kind", kind: "apiVersion: v1\nkind: ConfigMap\n", want: false},
		{name: "crd.yaml declares it", kind: "apiVersion: a.example.com/v1\nkind: Widget\n",
			crd: crd("v1", "          status:\n            type: object\n            properties:\n              observedRevision: {type: integer}\n"), want: true},
		{name: "crd.yaml keeps unknown status fields", kind: "apiVersion: a.example.com/v1\nkind: Widget\n",
			crd: crd("v1", "          status: {type: object, x-kubernetes-preserve-unknown-fields: true}\n"), want: true},
		{name: "crd.yaml without it", kind: "apiVersion: a.example.com/v1\nkind: Widget\n",
			crd: crd("v1", "          status:\n            type: object\n            properties:\n              observedGeneration: {type: integer}\n"), want: false},
		{name: "crd.yaml has it at another version", kind: "apiVersion: a.example.com/v1\nkind: Widget\n",
			crd: crd("v2", "          status:\n            type: object\n            properties:\n              observedRevision: {type: integer}\n"), want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := layout.Files{KindFile: []byte(tc.kind)}
			if tc.crd != "" {
				files[CRDFile] = []byte(tc.crd)
			}
			k, err := Compile("w", "w", files)
			if err != nil {
				t.Fatal(err)
			}
			if got := k.RecordsRevision(); got != tc.want {
				t.Errorf("RecordsRevision = %v, want %v", got, tc.want)
			}
		})
	}
}
