package cached

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStub: a stub holds metadata and no content: it says so, refuses to
// decode, stays one when copied, and has no condition.
func TestStub(t *testing.T) {
	s := Stub(metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		metav1.ObjectMeta{Name: "c", Namespace: "ns", Labels: map[string]string{"k": "v"}})
	if !s.Stubbed() {
		t.Fatal("a stub says it holds its content")
	}
	if u, err := s.Object(); err == nil {
		t.Fatalf("a stub decoded to %v", u)
	}
	cp := s.DeepCopyObject().(*Object)
	cp.Labels["k"] = "changed"
	if !cp.Stubbed() || s.Labels["k"] != "v" || cp.Name != "c" {
		t.Errorf("copy %+v of stub %+v", cp, s)
	}
	if got := s.Condition("Ready"); got != "" {
		t.Errorf("a stub's condition %q", got)
	}
	whole, err := decodeObject([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{}}`))
	if err != nil || whole.(*Object).Stubbed() {
		t.Fatalf("a decoded object: %v, stub %v", err, err == nil && whole.(*Object).Stubbed())
	}
}

// TestLabelsFromJSON: a decoded object's labels and annotations are read
// from its JSON at each call, each a map of the caller's own; an object
// without them has none; a stub's are its maps.
func TestLabelsFromJSON(t *testing.T) {
	o, err := Written([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","labels":{"a":"1","b":"2"},"annotations":{"x":"y"},"managedFields":[{"manager":"m"}]},"data":{"k":"v"}}`))
	if err != nil {
		t.Fatal(err)
	}
	l := o.GetLabels()
	if len(l) != 2 || l["a"] != "1" || o.GetAnnotations()["x"] != "y" {
		t.Fatalf("labels %v annotations %v", l, o.GetAnnotations())
	}
	l["a"] = "changed"
	if o.GetLabels()["a"] != "1" {
		t.Error("a change of the returned map changed the cached object")
	}
	if cp := o.DeepCopyObject().(*Object); cp.GetLabels()["b"] != "2" || cp.GetAnnotations()["x"] != "y" {
		t.Errorf("a copy lost its labels: %v %v", cp.GetLabels(), cp.GetAnnotations())
	}
	bare, err := Written([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	if bare.GetLabels() != nil || bare.GetAnnotations() != nil {
		t.Errorf("no labels: got %v %v", bare.GetLabels(), bare.GetAnnotations())
	}
}
