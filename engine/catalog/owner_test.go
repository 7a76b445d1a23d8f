package catalog

import (
	"testing"

	"github.com/tmplop/operator/engine/layout"
)

// TestOwnerAPIVersion: a child's controller reference names the first
// served version of the kind, which stays when a new version becomes the
// hub, and moves on only when that version stops being served.
func TestOwnerAPIVersion(t *testing.T) {
	const convs = "spec: {}\n"
	cases := []struct {
		name, kind string
		want       string
	}{
		{name: "one version", kind: "apiVersion: a.example.com/v1alpha1\nkind: A\n", want: "a.example.com/v1alpha1"},
		{name: "hub moved", kind: "apiVersion: a.example.com/v1\nkind: A\nversions:\n- name: v1alpha1\n- name: v1\n  storage: true\n", want: "a.example.com/v1alpha1"},
		{name: "old version no longer served", kind: "apiVersion: a.example.com/v1\nkind: A\nversions:\n- name: v1alpha1\n  served: false\n- name: v1\n  storage: true\n", want: "a.example.com/v1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := layout.Files{KindFile: []byte(tc.kind)}
			if tc.name != "one version" {
				files[layout.ConversionFile("v1alpha1", "v1")] = []byte(convs)
				files[layout.ConversionFile("v1", "v1alpha1")] = []byte(convs)
			}
			k, err := Compile("a", "a", files)
			if err != nil {
				t.Fatal(err)
			}
			if got := k.OwnerAPIVersion(); got != tc.want {
				t.Errorf("OwnerAPIVersion = %s, want %s", got, tc.want)
			}
		})
	}
}
