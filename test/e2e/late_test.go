package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/test/cluster"
)

// TestKindBeforeItsCRD: a kind started before its CRD exists waits for it,
// and serves its objects once the CRD is installed, with no restart.
func TestKindBeforeItsCRD(t *testing.T) {
	k, err := catalog.LoadKind("testdata/templates/late")
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Start(k); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mgr.Stop(k.GVK.GroupKind())
		_, _ = env.Kubectl(context.Background(), "delete", "-f", "testdata/late-crd.yaml", "--wait=false")
	})
	time.Sleep(2 * time.Second) // the kind is now waiting for its CRD
	if out, err := env.Kubectl(t.Context(), "apply", "--server-side", "-f", "testdata/late-crd.yaml"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out, err := env.Kubectl(t.Context(), "wait", "--for=condition=Established", "crd/lates.e2e.tmplop.io"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ns := env.Namespace(t)
	env.Create(t, schema.GroupVersionResource{Group: "e2e.tmplop.io", Version: "v1", Resource: "lates"}, ns,
		"apiVersion: e2e.tmplop.io/v1\nkind: Late\nmetadata:\n  name: l\nspec:\n  message: hello\n")
	cluster.Eventually(t, 90*time.Second, "the late kind's child", func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "l", metav1.GetOptions{})
		return err == nil && cm.Data["message"] == "hello", nil
	})
}
