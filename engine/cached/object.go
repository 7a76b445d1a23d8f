package cached

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is an object as the informers cache it: the metadata that cache
// keys, indexes, event filters and ownership checks read, as fields, and
// the whole object (less managedFields) as JSON. At 10,000 objects with
// 20,000 children, the difference with unstructured maps is most of the
// operator's memory.
//
// A stub (Stub) holds the metadata only: what an informer keeps of an
// object it must know exists but will not read.
type Object struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	raw []byte // nil for a stub
	// labels and annotations are where the object's labels and
	// annotations are in raw, decoded at each GetLabels and
	// GetAnnotations rather than kept as maps beside the JSON that holds
	// them: the maps were 2 KB of every object of a kind with its two
	// children (docs/performance.md). Zero: none; ObjectMeta's own maps
	// are then the object's (a stub, an object made from its maps).
	labels, annotations ref
}

// ref is a slice of an Object's raw JSON.
type ref struct{ off, n int32 }

// GetLabels implements metav1.Object: the labels decoded from the JSON,
// a map of the caller's own.
func (c *Object) GetLabels() map[string]string {
	if m, ok := c.stringMap(c.labels); ok {
		return m
	}
	return c.ObjectMeta.Labels
}

// GetAnnotations implements metav1.Object, as GetLabels.
func (c *Object) GetAnnotations() map[string]string {
	if m, ok := c.stringMap(c.annotations); ok {
		return m
	}
	return c.ObjectMeta.Annotations
}

// stringMap decodes the JSON object at r; false when r is zero or does
// not decode (then ObjectMeta's maps serve, empty for a decoded object).
func (c *Object) stringMap(r ref) (map[string]string, bool) {
	if r.n == 0 || c.raw == nil || int(r.off)+int(r.n) > len(c.raw) {
		return nil, false
	}
	var m map[string]string
	if err := json.Unmarshal(c.raw[r.off:r.off+r.n], &m); err != nil {
		return nil, false
	}
	return m, true
}

// Stub is an Object of meta and no content, whose Object fails.
func Stub(typ metav1.TypeMeta, meta metav1.ObjectMeta) *Object {
	return &Object{TypeMeta: typ, ObjectMeta: meta}
}

// Stubbed reports whether c holds only its metadata (Stub).
func (c *Object) Stubbed() bool { return c.raw == nil }

var _ runtime.Object = (*Object)(nil)

// DeepCopyObject implements runtime.Object. The JSON is never modified, so
// copies share it.
func (c *Object) DeepCopyObject() runtime.Object {
	out := &Object{TypeMeta: c.TypeMeta, raw: c.raw, labels: c.labels, annotations: c.annotations}
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// Object decodes the cached object; the caller owns the result.
func (c *Object) Object() (*unstructured.Unstructured, error) {
	if c.Stubbed() {
		return nil, fmt.Errorf("cached %s %s/%s: only its metadata is kept", c.Kind, c.Namespace, c.Name)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(c.raw); err != nil {
		return nil, fmt.Errorf("decode cached %s %s/%s: %w", c.Kind, c.Namespace, c.Name, err)
	}
	return u, nil
}

// FromUnstructured is the Object of u, whose managedFields it clears.
func FromUnstructured(u *unstructured.Unstructured) (*Object, error) {
	u.SetManagedFields(nil)
	raw, err := u.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode %s %s/%s for the cache: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return &Object{
		TypeMeta:   metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
		ObjectMeta: cachedMeta(u),
		raw:        raw,
	}, nil
}

// cachedMeta is the metadata an Object keeps as fields.
func cachedMeta(m metav1.Object) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(),
		Generation: m.GetGeneration(), Labels: m.GetLabels(), Annotations: m.GetAnnotations(),
		OwnerReferences: m.GetOwnerReferences(), Finalizers: m.GetFinalizers(), DeletionTimestamp: m.GetDeletionTimestamp(),
	}
}

// List is a list of Objects, as a LIST returns them.
type List struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []Object
}

var _ runtime.Object = (*List)(nil)

// DeepCopyObject implements runtime.Object.
func (l *List) DeepCopyObject() runtime.Object {
	out := &List{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Object, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Object)
	}
	return out
}

// Condition returns the status of the object's condition typ ("" when it
// has none), decoding only status.conditions: what a scrape that counts
// Ready objects reads of every cached object.
func (c *Object) Condition(typ string) string {
	var o struct {
		Status struct {
			Conditions []struct {
				Type   string `json:"type"`
				Status string `json:"status"`
			} `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(c.raw, &o); err != nil {
		return ""
	}
	for _, cond := range o.Status.Conditions {
		if cond.Type == typ {
			return cond.Status
		}
	}
	return ""
}
