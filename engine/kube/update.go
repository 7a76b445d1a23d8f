package kube

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Update writes obj whole (a PUT) under the precondition of its
// resourceVersion, as the field manager. The engine applies what it owns;
// Update is for the writes that must not change a field: engine/migrate's
// write of an object as it was read, which moves it to its CRD's storage
// version and changes nothing else.
func (c *Client) Update(ctx context.Context, m *meta.RESTMapping, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return marked(c.resource(m, obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{FieldManager: c.fieldManager}))
}

// UpdateStatus writes obj's status subresource whole under the
// precondition of its resourceVersion: engine/migrate's
// status.storedVersions and condition of a CRD, a list the API server
// merges with no field manager of its own.
func (c *Client) UpdateStatus(ctx context.Context, m *meta.RESTMapping, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return marked(c.resource(m, obj.GetNamespace()).UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: c.fieldManager}))
}
