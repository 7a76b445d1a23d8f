package crd_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/tmplop/operator/engine/crd"
	"github.com/tmplop/operator/engine/render"
)

// twoVersions is a crd.yaml of things.example.com Thing serving v1alpha1
// and v1, with conversion (indented under spec) when not "".
func twoVersions(conversion string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.things.example.com}
spec:
  group: things.example.com
  names: {kind: Thing, plural: things, singular: thing, listKind: ThingList}
  scope: Namespaced
` + conversion + `  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
}

var thingConversions = map[string]string{"convert.v1alpha1.v1.yaml": "spec: {}\n", "convert.v1.v1alpha1.yaml": "spec: {}\n"}

// TestConversion: a CRD of several versions, generated or the folder's
// crd.yaml, converts with the operator's webhook at the default Service
// until SetConversionClient says where it is; a CRD of one version has no
// conversion; a crd.yaml that says another strategy is refused at its
// line.
func TestConversion(t *testing.T) {
	files := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range thingConversions {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name     string
		files    map[string]string
		webhook  bool
		err      string
		versions []string
		none     bool // the crd.yaml's conversion None kept; the kind of one version
	}{
		{name: "one version", files: map[string]string{"kind.yaml": kindHeader + "spec: {a: string}\n"}, versions: []string{"v1"}},
		{name: "generated", files: files(map[string]string{"kind.yaml": kindHeader + "spec: {a: string}\nversions: [{name: v1alpha1}]\n"}), webhook: true, versions: []string{"v1", "v1alpha1"}},
		{name: "crd.yaml", files: files(map[string]string{"kind.yaml": kindHeader, "crd.yaml": twoVersions("")}), webhook: true, versions: []string{"v1alpha1", "v1"}},
		{name: "crd.yaml with its webhook", files: files(map[string]string{"kind.yaml": kindHeader, "crd.yaml": twoVersions("  conversion:\n    strategy: Webhook\n")}), webhook: true, versions: []string{"v1alpha1", "v1"}},
		{name: "crd.yaml without conversion", files: files(map[string]string{"kind.yaml": kindHeader, "crd.yaml": twoVersions("  conversion:\n    strategy: None\n")}),
			err: "crd.yaml:9: spec.conversion.strategy None: the folder's conversion templates convert between its versions"},
		// As before folders had versions: no templates, the crd.yaml's own
		// conversion (None), the kind the hub alone.
		{name: "crd.yaml of two versions, no conversion templates", files: map[string]string{"kind.yaml": kindHeader, "crd.yaml": twoVersions("  conversion:\n    strategy: None\n")},
			none: true, versions: []string{"v1alpha1", "v1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := load(t, tc.files)
			if err != nil {
				t.Fatal(err)
			}
			c, err := crd.ForKind(k)
			if tc.err != "" {
				re, ok := errors.AsType[*render.Error](err)
				if !ok || !strings.HasPrefix(err.Error(), tc.err) || re.Code != render.CodeInput {
					t.Fatalf("err = %v, want a *render.Error %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, v := range c.Spec.Versions {
				names = append(names, v.Name)
			}
			if !reflect.DeepEqual(names, tc.versions) {
				t.Errorf("versions %v, want %v", names, tc.versions)
			}
			if tc.none {
				if c.Spec.Conversion == nil || c.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter || k.Converter() != nil || len(k.Versions()) != 1 {
					t.Errorf("conversion %+v, converter %v, versions %v: want None kept, a kind of one version", c.Spec.Conversion, k.Converter(), k.Versions())
				}
				return
			}
			if !tc.webhook {
				if c.Spec.Conversion != nil {
					t.Errorf("conversion %+v, want none", c.Spec.Conversion)
				}
				return
			}
			conv := c.Spec.Conversion
			if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil ||
				!reflect.DeepEqual(*conv.Webhook.ClientConfig, crd.DefaultWebhookService()) {
				t.Fatalf("conversion %+v, want the webhook at the default Service", conv)
			}
			url := "https://127.0.0.1:9443/convert"
			cc := apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: []byte("ca")}
			crd.SetConversionClient(c, cc)
			url = "changed"
			if got := c.Spec.Conversion.Webhook.ClientConfig; got.URL == nil || *got.URL != "https://127.0.0.1:9443/convert" || string(got.CABundle) != "ca" || got.Service != nil {
				t.Errorf("clientConfig %+v after SetConversionClient", got)
			}
		})
	}
	// One version: nothing to set.
	c := &apiextensionsv1.CustomResourceDefinition{}
	crd.SetConversionClient(c, crd.DefaultWebhookService())
	if c.Spec.Conversion != nil {
		t.Errorf("SetConversionClient gave a CRD without conversion one: %+v", c.Spec.Conversion)
	}
}

// TestVersionErrors: a mistake in a version's columns is kind.yaml's, at
// the entry's line.
func TestVersionErrors(t *testing.T) {
	files := map[string]string{"kind.yaml": kindHeader + "spec: {a: string}\nversions:\n- name: v1alpha1\n  spec: {b: string}\n  printerColumns: [{name: B, type: integer, jsonPath: .spec.b}]\n"}
	for k, v := range thingConversions {
		files[k] = v
	}
	k, err := load(t, files)
	if err != nil {
		t.Fatal(err)
	}
	_, err = crd.ForKind(k)
	re, ok := errors.AsType[*render.Error](err)
	if !ok || re.Template != "kind.yaml" || re.Line != 7 || !strings.Contains(err.Error(), "versions[0].printerColumns[0] (B): a integer column on a field of type string") {
		t.Errorf("err = %v, want kind.yaml:7 about versions[0].printerColumns[0]", err)
	}
}
