package controller

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// compactObject is an object as the operator's informers cache it: the
// metadata that cache keys, indexes, event filters and ownership checks
// read, as fields, and the whole object (less managedFields) as JSON,
// decoded when a reconcile reads it. An unstructured Deployment holds
// about 8 KB of heap, its JSON 1.4 KB: at 10,000 objects with 20,000
// children, the difference is most of the operator's memory. A decode
// costs about what the deep copy it replaces cost.
type compactObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	raw []byte
}

var _ runtime.Object = (*compactObject)(nil)

// DeepCopyObject implements runtime.Object. The JSON is never modified, so
// copies share it.
func (c *compactObject) DeepCopyObject() runtime.Object {
	out := &compactObject{TypeMeta: c.TypeMeta, raw: c.raw}
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// Object decodes the cached object; the caller owns the result.
func (c *compactObject) Object() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(c.raw); err != nil {
		return nil, fmt.Errorf("decode cached %s %s/%s: %w", c.Kind, c.Namespace, c.Name, err)
	}
	return u, nil
}

// compact is the informers' transform. It keeps of the metadata only what
// is read from the cache without decoding.
func compact(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s/%s for the cache: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return &compactObject{
		TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
		ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
			Generation: u.GetGeneration(), Labels: u.GetLabels(), Annotations: u.GetAnnotations(),
			OwnerReferences: u.GetOwnerReferences(), Finalizers: u.GetFinalizers(), DeletionTimestamp: u.GetDeletionTimestamp(),
		},
		raw: raw,
	}, nil
}
