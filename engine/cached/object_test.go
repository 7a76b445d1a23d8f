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
