package revisiontest

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tmplop/operator/engine/kube"
)

// TestTyped: the adapter creates, lists, updates and deletes through the
// typed client, each in the record's namespace.
func TestTyped(t *testing.T) {
	ctx := t.Context()
	var api kube.RevisionAPI = Typed{Getter: fake.NewClientset().AppsV1()}
	r := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "r1"}, Revision: 1}
	if _, err := api.Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Revision = 2
	if _, err := api.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := api.List(ctx, "ops", metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Revision != 2 {
		t.Fatalf("list: %v, %v; want r1 at revision 2", l, err)
	}
	if other, _ := api.List(ctx, "elsewhere", metav1.ListOptions{}); len(other.Items) != 0 {
		t.Errorf("another namespace lists %d records", len(other.Items))
	}
	if err := api.Delete(ctx, "ops", "r1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, _ := api.List(ctx, "ops", metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("%d records after the delete", len(l.Items))
	}
}
