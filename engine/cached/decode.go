package cached

import (
	"bytes"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsjson "sigs.k8s.io/json"
)

// head is what decoding an object reads of it; everything else is skipped
// by the JSON scanner without being built.
type head struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   headMeta `json:"metadata"`
}

type headMeta struct {
	Name              string                  `json:"name"`
	Namespace         string                  `json:"namespace"`
	UID               types.UID               `json:"uid"`
	ResourceVersion   string                  `json:"resourceVersion"`
	Generation        int64                   `json:"generation"`
	Labels            span                    `json:"labels"`
	Annotations       span                    `json:"annotations"`
	OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
	Finalizers        []string                `json:"finalizers"`
	DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
	ManagedFields     span                    `json:"managedFields"`
}

// span records where a value is in the decoded input: the JSON decoder
// hands an Unmarshaler the value's bytes as a slice of its input.
type span struct{ b []byte }

func (s *span) UnmarshalJSON(b []byte) error {
	s.b = b
	return nil
}

// decodeObject decodes one object of a list or a watch event. What the
// Object keeps of data (all of it less managedFields) is a copy, made once:
// data is a slice of a list's body or of the watch decoder's buffer, which
// the caller may reuse. An object of kind Status (a watch's error event) is
// returned as a *metav1.Status.
func decodeObject(data []byte) (runtime.Object, error) {
	var h head
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &h); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	if h.Kind == "Status" && h.APIVersion == "v1" {
		st := &metav1.Status{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, st); err != nil {
			return nil, fmt.Errorf("decode status: %w", err)
		}
		return st, nil
	}
	var raw []byte
	cutFrom, cutTo := len(data), len(data)
	if h.Metadata.ManagedFields.b == nil {
		raw = bytes.Clone(data)
	} else {
		var ok bool
		if raw, cutFrom, cutTo, ok = withoutValue(data, h.Metadata.ManagedFields.b, `"managedFields"`); !ok {
			// Not where a compact encoding puts it: take the long way.
			return reencoded(data)
		}
	}
	m := h.Metadata
	o := &Object{
		TypeMeta: metav1.TypeMeta{APIVersion: h.APIVersion, Kind: h.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			Generation:      m.Generation,
			OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers, DeletionTimestamp: m.DeletionTimestamp,
		},
		raw: raw,
	}
	var ok1, ok2 bool
	o.labels, ok1 = m.Labels.in(data, cutFrom, cutTo)
	o.annotations, ok2 = m.Annotations.in(data, cutFrom, cutTo)
	if !ok1 || !ok2 {
		return reencoded(data)
	}
	return o, nil
}

// in is where s's value is in raw, the copy of data less [cutFrom,
// cutTo): zero when s is absent or null; ok false when s is not a slice
// of data outside the cut.
func (s span) in(data []byte, cutFrom, cutTo int) (r ref, ok bool) {
	if len(s.b) == 0 || string(s.b) == "null" {
		return ref{}, true
	}
	if cap(s.b) > cap(data) {
		return ref{}, false
	}
	start := cap(data) - cap(s.b)
	end := start + len(s.b)
	if end > len(data) || &data[start] != &s.b[0] {
		return ref{}, false
	}
	switch {
	case end <= cutFrom:
	case start >= cutTo:
		start -= cutTo - cutFrom
	default:
		return ref{}, false
	}
	return ref{off: int32(start), n: int32(len(s.b))}, true
}

// reencoded is decodeObject through unstructured maps.
func reencoded(data []byte) (*Object, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	return FromUnstructured(u)
}

// withoutValue returns a copy of data without the member key:value whose
// value is the slice value of data, and without the comma that separated
// it from its neighbour. ok is false when value is not a slice of data or
// is not preceded by key, in which case the caller must not trust it.
func withoutValue(data, value []byte, key string) (out []byte, cutFrom, cutTo int, ok bool) {
	if len(value) == 0 || cap(value) > cap(data) {
		return nil, 0, 0, false
	}
	start := cap(data) - cap(value)
	end := start + len(value)
	if end > len(data) || &data[start] != &value[0] {
		return nil, 0, 0, false
	}
	i := skipSpaceBack(data, start-1)
	if i < 0 || data[i] != ':' {
		return nil, 0, 0, false
	}
	i = skipSpaceBack(data, i-1)
	keyStart := i - len(key) + 1
	if keyStart < 0 || string(data[keyStart:i+1]) != key {
		return nil, 0, 0, false
	}
	cutFrom, cutTo = keyStart, end
	switch j := skipSpaceBack(data, keyStart-1); {
	case j >= 0 && data[j] == ',':
		cutFrom = j
	case j >= 0 && data[j] == '{':
		k := skipSpace(data, end)
		switch {
		case k < len(data) && data[k] == ',':
			cutTo = k + 1
		case k < len(data) && data[k] == '}':
		default:
			return nil, 0, 0, false
		}
	default:
		return nil, 0, 0, false
	}
	out = make([]byte, 0, len(data)-(cutTo-cutFrom))
	out = append(out, data[:cutFrom]...)
	return append(out, data[cutTo:]...), cutFrom, cutTo, true
}

func skipSpaceBack(b []byte, i int) int {
	for i >= 0 && isSpace(b[i]) {
		i--
	}
	return i
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// listBody is a LIST response; its items are decoded one by one.
type listBody struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   metav1.ListMeta `json:"metadata"`
	Items      []rawItem       `json:"items"`
}

// rawItem is an item's bytes, a slice of the list's body: decodeObject
// copies what it keeps, so that each item is copied once and the body is
// not kept.
type rawItem []byte

func (r *rawItem) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// decodeList decodes a LIST response. Items of built-in kinds come without
// apiVersion and kind; they are the list's, as the dynamic client sets
// them.
func decodeList(data []byte, into *List) error {
	var l listBody
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &l); err != nil {
		return fmt.Errorf("decode list: %w", err)
	}
	into.TypeMeta = metav1.TypeMeta{APIVersion: l.APIVersion, Kind: l.Kind}
	into.ListMeta = l.Metadata
	into.Items = make([]Object, 0, len(l.Items))
	itemKind := strings.TrimSuffix(l.Kind, "List")
	for _, item := range l.Items {
		o, err := decodeObject(item)
		if err != nil {
			return err
		}
		c, ok := o.(*Object)
		if !ok {
			return fmt.Errorf("decode list: an item of kind Status")
		}
		if c.Kind == "" {
			if c, err = withKind(item, l.APIVersion, itemKind); err != nil {
				return err
			}
		}
		into.Items = append(into.Items, *c)
	}
	return nil
}

// withKind decodes an item that does not say what it is, and says it.
func withKind(item []byte, apiVersion, kind string) (*Object, error) {
	m := map[string]any{}
	if err := utiljson.Unmarshal(item, &m); err != nil {
		return nil, fmt.Errorf("decode list item: %w", err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return FromUnstructured(u)
}
