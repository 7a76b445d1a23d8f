package e2e

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/test/cluster"
)

var (
	widgetGVR      = cluster.GVR("e2e.tmplop.io", "v1", "widgets")
	gadgetGVR      = cluster.GVR("e2e.tmplop.io", "v1", "gadgets")
	configMapGVR   = cluster.GVR("", "v1", "configmaps")
	clusterRoleGVR = cluster.GVR("rbac.authorization.k8s.io", "v1", "clusterroles")
)

func TestPrune(t *testing.T) {
	ns := env.Namespace(t)
	env.Create(t, widgetGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  extra: true\n")
	env.WaitReconciled(t, widgetGVR, ns, "w")
	if !env.Exists(t, configMapGVR, ns, "w-extra") || !env.Exists(t, configMapGVR, ns, "w-base") {
		t.Fatal("children not created")
	}
	// A ConfigMap of the same name pattern that is not ours must survive.
	bystander := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "w-bystander", "namespace": ns,
			"labels": map[string]any{"app.kubernetes.io/managed-by": fieldManager}},
	}}
	env.CreateObject(t, configMapGVR, ns, bystander)

	t.Run("no prune after a render error", func(t *testing.T) {
		env.Patch(t, widgetGVR, ns, "w", `{"spec":{"extra":false,"fail":true}}`)
		env.WaitCondition(t, widgetGVR, ns, "w", "Reconciled", "False", "RenderFailed", "spec.fail is set")
		time.Sleep(time.Second)
		if !env.Exists(t, configMapGVR, ns, "w-extra") || !env.Exists(t, configMapGVR, ns, "w-base") {
			t.Fatal("a failed render deleted children")
		}
	})

	t.Run("a child no longer rendered is pruned", func(t *testing.T) {
		env.Patch(t, widgetGVR, ns, "w", `{"spec":{"fail":null}}`)
		env.WaitReconciled(t, widgetGVR, ns, "w")
		env.WaitGone(t, configMapGVR, ns, "w-extra", 30*time.Second)
		if !env.Exists(t, configMapGVR, ns, "w-base") || !env.Exists(t, configMapGVR, ns, "w-bystander") {
			t.Fatal("pruning deleted a child still rendered, or an object that is not a child")
		}
	})
}

func TestScope(t *testing.T) {
	ns := env.Namespace(t)

	t.Run("a cluster-scoped child is refused without the opt-in", func(t *testing.T) {
		env.Create(t, widgetGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  clusterRole: true\n")
		env.WaitCondition(t, widgetGVR, ns, "w", "Reconciled", "False", "RenderFailed", "allowClusterScoped")
		if env.Exists(t, clusterRoleGVR, "", ns+"-w") || env.Exists(t, configMapGVR, ns, "w-base") {
			t.Fatal("children were applied although one was refused")
		}
	})

	t.Run("a lookup outside the namespace is refused", func(t *testing.T) {
		env.Create(t, widgetGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Widget\nmetadata:\n  name: peek\nspec:\n  lookupNamespace: kube-system\n")
		env.WaitCondition(t, widgetGVR, ns, "peek", "Reconciled", "False", "RenderFailed", "outside the parent's namespace")
	})

	t.Run("with the opt-in, a finalizer cleans up cluster-scoped children", func(t *testing.T) {
		env.Create(t, gadgetGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Gadget\nmetadata:\n  name: g\n")
		env.WaitReconciled(t, gadgetGVR, ns, "g")
		g, err := env.Get(t.Context(), gadgetGVR, ns, "g")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range g.GetFinalizers() {
			found = found || f == reconcile.Finalizer
		}
		if !found || !env.Exists(t, clusterRoleGVR, "", "gadget-"+ns+"-g") {
			t.Fatalf("finalizers %v; ClusterRole must exist", g.GetFinalizers())
		}
		env.Delete(t, gadgetGVR, ns, "g")
		env.WaitGone(t, clusterRoleGVR, "", "gadget-"+ns+"-g", 30*time.Second)
		env.WaitGone(t, gadgetGVR, ns, "g", 30*time.Second)
	})
}
