package ownership

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// TestStubMeta: a stub keeps what Claim, pruning and the skip decisions
// read, the same as the object for every legitimate value, and is small
// whatever the object holds: 1 MB of labels, of annotations or of owner
// references (which the API server bounds by the object's size only).
func TestStubMeta(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	child := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
		u.SetName("c")
		u.SetNamespace("ns")
		u.SetUID("u1")
		u.SetResourceVersion("7")
		u.SetGeneration(3)
		u.SetDeletionTimestamp(&metav1.Time{Time: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)})
		u.SetFinalizers([]string{"f"})
		u.SetLabels(map[string]string{LabelManagedBy: "op", LabelParentUID: "p-uid", "app": "web"})
		u.SetAnnotations(map[string]string{AnnotationParent: "P.e.io/ns/p", AnnotationTemplate: "templates/cm.yaml",
			AnnotationPrune: "disabled", AnnotationHash: "h", AnnotationHelmReleaseName: "r", AnnotationHelmReleaseNamespace: "ns",
			"kubectl.kubernetes.io/last-applied-configuration": "{}"})
		u.SetOwnerReferences([]metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Other", Name: "o", UID: "o-uid"},
			{APIVersion: "e.io/v1", Kind: "P", Name: "p", UID: "p-uid", Controller: ptr.To(true)},
		})
		return u
	}

	t.Run("legitimate values are kept", func(t *testing.T) {
		u := child()
		s := StubMeta(u)
		want := u.GetAnnotations()
		delete(want, "kubectl.kubernetes.io/last-applied-configuration")
		if s.Name != "c" || s.Namespace != "ns" || s.UID != "u1" || s.ResourceVersion != "7" || s.Generation != 3 || s.DeletionTimestamp == nil {
			t.Errorf("identity %+v", s)
		}
		if fmt.Sprint(s.Labels) != fmt.Sprint(map[string]string{LabelManagedBy: "op", LabelParentUID: "p-uid"}) {
			t.Errorf("labels %v", s.Labels)
		}
		if fmt.Sprint(s.Annotations) != fmt.Sprint(want) {
			t.Errorf("annotations %v, want %v", s.Annotations, want)
		}
		if c := metav1.GetControllerOfNoCopy(&s); len(s.OwnerReferences) != 1 || c == nil || c.UID != "p-uid" || c.Name != "p" {
			t.Errorf("owner references %v, want the controller's only", s.OwnerReferences)
		}
		if s.Finalizers != nil {
			t.Errorf("finalizers %v", s.Finalizers)
		}
		if s := StubMeta(&metav1.ObjectMeta{Name: "bare"}); s.Labels != nil || s.Annotations != nil || s.OwnerReferences != nil {
			t.Errorf("a bare object's stub %+v", s)
		}
	})

	for _, tc := range []struct {
		name  string
		forge func(u *unstructured.Unstructured)
	}{
		{"1 MB of other labels", func(u *unstructured.Unstructured) {
			l := u.GetLabels()
			for i := range 1 << 14 {
				l[fmt.Sprintf("k%05d", i)] = strings.Repeat("v", 63)
			}
			u.SetLabels(l)
		}},
		{"1 MB in the annotations read", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{AnnotationParent: huge, AnnotationTemplate: huge, AnnotationPrune: huge,
				AnnotationHash: huge, AnnotationHelmReleaseName: huge, AnnotationHelmReleaseNamespace: huge})
		}},
		{"1 MB of owner references", func(u *unstructured.Unstructured) {
			refs := u.GetOwnerReferences()
			for i := range 1 << 13 {
				refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprint("o", i), UID: "u"})
			}
			u.SetOwnerReferences(refs)
		}},
		{"a controller reference of 1 MB", func(u *unstructured.Unstructured) {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: huge, Kind: huge, Name: huge, UID: "u" + "\x00" + "x", Controller: ptr.To(true)}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := child()
			tc.forge(u)
			s := StubMeta(u)
			data, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > 16<<10 {
				t.Errorf("stub of %d bytes, want at most 16 KiB", len(data))
			}
			for k, v := range s.Annotations {
				if limit := map[bool]int{true: maxStubTemplate, false: maxStubValue}[k == AnnotationTemplate]; len(v) > limit {
					t.Errorf("annotation %s of %d bytes", k, len(v))
				}
			}
			if c := metav1.GetControllerOfNoCopy(&s); c == nil {
				t.Error("the controller reference was dropped: a claim would take the object for nobody's")
			} else if len(c.APIVersion) > maxStubValue || len(c.Kind) > maxStubValue || len(c.Name) > maxStubValue {
				t.Errorf("controller reference of %d, %d, %d bytes", len(c.APIVersion), len(c.Kind), len(c.Name))
			}
		})
	}
}

// TestStubClaims: Claim decides on a stub as on the object, for the
// objects a stub is made of: consent, another parent's, Helm's release,
// another controller's; and a value cut to its bound names no parent.
func TestStubClaims(t *testing.T) {
	parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "P",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "p-uid"}}}
	obj := func(labels, ann map[string]string, ctrl *metav1.OwnerReference) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
		u.SetName("c")
		u.SetNamespace("ns")
		u.SetLabels(labels)
		u.SetAnnotations(ann)
		if ctrl != nil {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Other", Name: "o", UID: "o"}, *ctrl})
		}
		return u
	}
	other := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "d-uid", Controller: ptr.To(true)}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		who  Claimant
	}{
		{"consent", obj(nil, map[string]string{AnnotationParent: "P.e.io/ns/p"}, nil), Claimant{Manager: "op"}},
		{"another parent's", obj(map[string]string{LabelManagedBy: "op"}, map[string]string{AnnotationParent: "P.e.io/ns/q"}, nil), Claimant{Manager: "op"}},
		{"someone else's", obj(nil, nil, nil), Claimant{Manager: "op"}},
		{"another controller's, with consent", obj(nil, map[string]string{AnnotationParent: "P.e.io/ns/p"}, other), Claimant{Manager: "op"}},
		{"Helm's release", obj(map[string]string{LabelManagedBy: "Helm"},
			map[string]string{AnnotationHelmReleaseName: "p", AnnotationHelmReleaseNamespace: "ns"}, nil), Claimant{Manager: "op", AdoptHelmReleases: true}},
		{"a parent annotation past the bound", obj(nil, map[string]string{AnnotationParent: "P.e.io/ns/p" + strings.Repeat(" ", maxStubValue)}, nil), Claimant{Manager: "op"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := StubMeta(tc.obj)
			want, got := Claim(tc.obj, tc.obj.GroupVersionKind().GroupKind(), parent, tc.who), Claim(&s, tc.obj.GroupVersionKind().GroupKind(), parent, tc.who)
			if (want == nil) != (got == nil) || want != nil && want.Error() != got.Error() {
				t.Errorf("Claim on the stub: %v; on the object: %v", got, want)
			}
		})
	}
}
