package lint

import (
	"context"
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeCluster is a Cluster of one CRD (nil: none) and its objects by
// version; it counts the calls.
type fakeCluster struct {
	crd     *apiextensionsv1.CustomResourceDefinition
	objects map[string][]map[string]any
	listErr error
	calls   []string
}

func (c *fakeCluster) CRD(_ context.Context, gk schema.GroupKind) (*apiextensionsv1.CustomResourceDefinition, error) {
	c.calls = append(c.calls, "crd "+gk.String())
	if c.crd == nil || c.crd.Spec.Group != gk.Group || c.crd.Spec.Names.Kind != gk.Kind {
		return nil, nil
	}
	return c.crd, nil
}

func (c *fakeCluster) List(_ context.Context, gvr schema.GroupVersionResource, fn func(*unstructured.Unstructured) error) error {
	c.calls = append(c.calls, "list "+gvr.String())
	if c.listErr != nil {
		return c.listErr
	}
	for _, o := range c.objects[gvr.Version] {
		if err := fn(&unstructured.Unstructured{Object: o}); err != nil {
			return err
		}
	}
	return nil
}

// memcachedCRD is the CRD of LNT104-conversion's Memcached, stored at
// storage.
func memcachedCRD(storage string) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{}
	c.Name = "memcacheds.cache.example.com"
	c.Spec.Group = "cache.example.com"
	c.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Kind: "Memcached", Plural: "memcacheds"}
	for _, v := range []string{"v1alpha1", "v1", "v9"} {
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: v == storage})
	}
	return c
}

func memcached(version, name string, spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "cache.example.com/" + version, "kind": "Memcached",
		"metadata": map[string]any{"name": name, "namespace": "ns1", "uid": "u-" + name, "resourceVersion": "7"},
		"spec":     spec,
	}
}

// TestLive round-trips the objects of a fake cluster through the versions
// of LNT104-conversion's folder: each failure names the object and the
// template, and a kind the cluster has no CRD for, or that has one
// version, is skipped.
func TestLive(t *testing.T) {
	const conversion = "testdata/LNT104-conversion/templates"
	cases := []struct {
		name      string
		templates string
		cluster   *fakeCluster
		want      []string // findings: where code message-substring
		kind      string   // the LiveKind's String()
		calls     string
		err       string
	}{
		{
			name: "stored at v1alpha1: the object without size fails to the hub", templates: conversion,
			cluster: &fakeCluster{crd: memcachedCRD("v1alpha1"), objects: map[string][]map[string]any{"v1alpha1": {
				memcached("v1alpha1", "fine", map[string]any{"size": int64(2)}),
				memcached("v1alpha1", "broken", map[string]any{}),
			}}},
			want:  []string{conversion + "/memcached/convert.v1alpha1.v1.yaml:2 LNT104 spec.size is required (Memcached ns1/broken in the cluster)"},
			kind:  "Memcached.cache.example.com (" + conversion + "/memcached): 2 object(s) read at v1alpha1 and round-tripped through every served version",
			calls: "crd Memcached.cache.example.com, list cache.example.com/v1alpha1, Resource=memcacheds",
		},
		{
			name: "stored at the hub: the object whose tier renames it fails to v1alpha1", templates: conversion,
			cluster: &fakeCluster{crd: memcachedCRD("v1"), objects: map[string][]map[string]any{"v1": {
				memcached("v1", "plain", map[string]any{"replicas": int64(1)}),
				memcached("v1", "tiered", map[string]any{"replicas": int64(1), "tier": "gold"}),
			}}},
			want:  []string{conversion + "/memcached/convert.v1.v1alpha1.yaml LNT104 metadata.name changed: a conversion may change only labels and annotations (Memcached ns1/tiered in the cluster)"},
			kind:  "Memcached.cache.example.com (" + conversion + "/memcached): 2 object(s) read at v1 and round-tripped through every served version",
			calls: "crd Memcached.cache.example.com, list cache.example.com/v1, Resource=memcacheds",
		},
		{
			name: "stored at a version the folder does not have", templates: conversion,
			cluster: &fakeCluster{crd: memcachedCRD("v9")},
			want:    []string{conversion + "/memcached/kind.yaml:1 LNT104 the cluster's CRD memcacheds.cache.example.com stores Memcached at v9, a version the folder does not have"},
			kind:    "Memcached.cache.example.com (" + conversion + "/memcached): not checked: the CRD stores it at v9, which the folder does not have",
			calls:   "crd Memcached.cache.example.com",
		},
		{
			name: "no CRD in the cluster", templates: conversion, cluster: &fakeCluster{},
			kind:  "Memcached.cache.example.com (" + conversion + "/memcached): not checked: no CRD in the cluster",
			calls: "crd Memcached.cache.example.com",
		},
		{
			name: "a list that fails", templates: conversion,
			cluster: &fakeCluster{crd: memcachedCRD("v1"), listErr: errors.New("forbidden")},
			kind:    "Memcached.cache.example.com (" + conversion + "/memcached): 0 object(s) read at v1 and round-tripped through every served version",
			calls:   "crd Memcached.cache.example.com, list cache.example.com/v1, Resource=memcacheds",
			err:     "Memcached.cache.example.com: list cache.example.com/v1, Resource=memcacheds: forbidden",
		},
		{
			name: "one version: nothing read", templates: "testdata/clean/templates",
			cluster: &fakeCluster{crd: memcachedCRD("v1")},
			kind:    "not checked: the folder has one version",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, kinds, err := Live(t.Context(), LiveOptions{Templates: c.templates, Cluster: c.cluster})
			if (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
				t.Errorf("error %v, want %q", err, c.err)
			}
			var got []string
			for _, f := range fs {
				if f.Severity == Error {
					got = append(got, f.Where()+" "+f.Code+" "+f.Message)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], c.want[i]) {
					t.Errorf("finding\n%s\nwant one starting\n%s", got[i], c.want[i])
				}
			}
			if len(kinds) == 0 || !strings.Contains(LiveSummary(kinds), c.kind) {
				t.Errorf("summary %q, want it to hold %q", LiveSummary(kinds), c.kind)
			}
			if calls := strings.Join(c.cluster.calls, ", "); calls != c.calls {
				t.Errorf("calls %q, want %q", calls, c.calls)
			}
		})
	}
}
