package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// The calls a test makes on the objects of the control plane, as its admin.
// Each fails the test when the API server refuses, so that a test reads as
// its steps; Get is the exception, for polling inside Eventually.

// GVR is a resource by group, version and plural, for the tables of
// resources tests keep ("" is the core group).
func GVR(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// Resource is the admin's dynamic client of res in ns; ns "" is a
// cluster-scoped resource (or every namespace, to list).
func (c *Cluster) Resource(res schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return c.dyn.Resource(res)
	}
	return c.dyn.Resource(res).Namespace(ns)
}

// Create creates the object of a YAML manifest in ns ("" for a
// cluster-scoped one).
func (c *Cluster) Create(t testing.TB, res schema.GroupVersionResource, ns, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("manifest of %s: %v", res.Resource, err)
	}
	return c.CreateObject(t, res, ns, u)
}

// CreateSpec creates the object ns/name of res and kind with spec, built as
// a map so that no value goes through YAML quoting. The kind is given, never
// guessed from the resource.
func (c *Cluster) CreateSpec(t testing.TB, res schema.GroupVersionResource, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": res.GroupVersion().String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
	return c.CreateObject(t, res, ns, u)
}

// CreateObject creates u in ns ("" for a cluster-scoped object).
func (c *Cluster) CreateObject(t testing.TB, res schema.GroupVersionResource, ns string, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	if ns != "" {
		u.SetNamespace(ns)
	}
	got, err := c.Resource(res, ns).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s: %v", res.Resource, key(ns, u.GetName()), err)
	}
	return got
}

// Get reads an object; ns "" for a cluster-scoped one.
func (c *Cluster) Get(ctx context.Context, res schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	return c.Resource(res, ns).Get(ctx, name, metav1.GetOptions{})
}

// Exists reports whether the object exists now.
func (c *Cluster) Exists(t testing.TB, res schema.GroupVersionResource, ns, name string) bool {
	t.Helper()
	_, err := c.Get(context.Background(), res, ns, name)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("get %s %s: %v", res.Resource, key(ns, name), err)
	}
	return err == nil
}

// Patch sends a JSON merge patch, as a user's edit would be.
func (c *Cluster) Patch(t testing.TB, res schema.GroupVersionResource, ns, name, mergePatch string) *unstructured.Unstructured {
	t.Helper()
	got, err := c.Resource(res, ns).Patch(context.Background(), name, types.MergePatchType, []byte(mergePatch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch %s %s: %v", res.Resource, key(ns, name), err)
	}
	return got
}

// Delete deletes an object in the background; one already gone is not an
// error.
func (c *Cluster) Delete(t testing.TB, res schema.GroupVersionResource, ns, name string) {
	t.Helper()
	err := c.Resource(res, ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete %s %s: %v", res.Resource, key(ns, name), err)
	}
}

// WaitGone waits until the object is not found.
func (c *Cluster) WaitGone(t testing.TB, res schema.GroupVersionResource, ns, name string, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, fmt.Sprintf("%s %s gone", res.Resource, key(ns, name)), func(ctx context.Context) (bool, error) {
		_, err := c.Get(ctx, res, ns, name)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// key is ns/name, or name for a cluster-scoped object, for messages.
func key(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
