package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/test/cluster"
)

var (
	widgetGVR      = gvr("e2e.tmplop.io", "v1", "widgets")
	gadgetGVR      = gvr("e2e.tmplop.io", "v1", "gadgets")
	configMapGVR   = gvr("", "v1", "configmaps")
	clusterRoleGVR = gvr("rbac.authorization.k8s.io", "v1", "clusterroles")
)

func waitCondition(t *testing.T, res, ns, name, status, reason, fragment string) {
	t.Helper()
	r := widgetGVR
	if res == "gadget" {
		r = gadgetGVR
	}
	cluster.Eventually(t, 30*time.Second, "Reconciled="+status+" "+reason+" mentioning "+fragment, func(ctx context.Context) (bool, error) {
		o, err := get(ctx, r, ns, name)
		if err != nil {
			return false, err
		}
		st, rs, msg := condition(o, "Reconciled")
		gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		return st == status && rs == reason && strings.Contains(msg, fragment) && gen == o.GetGeneration(), nil
	})
}

func exists(t *testing.T, res schema.GroupVersionResource, ns, name string) bool {
	t.Helper()
	_, err := get(t.Context(), res, ns, name)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestPrune(t *testing.T) {
	ns := env.Namespace(t)
	create(t, widgetGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  extra: true\n")
	waitCondition(t, "widget", ns, "w", "True", "Reconciled", "")
	if !exists(t, configMapGVR, ns, "w-extra") || !exists(t, configMapGVR, ns, "w-base") {
		t.Fatal("children not created")
	}
	// A ConfigMap of the same name pattern that is not ours must survive.
	bystander := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "w-bystander", "namespace": ns,
			"labels": map[string]any{"app.kubernetes.io/managed-by": fieldManager}},
	}}
	if _, err := dyn.Resource(configMapGVR).Namespace(ns).Create(t.Context(), bystander, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("no prune after a render error", func(t *testing.T) {
		patch(t, widgetGVR, ns, "w", `{"spec":{"extra":false,"fail":true}}`)
		waitCondition(t, "widget", ns, "w", "False", "RenderFailed", "spec.fail is set")
		time.Sleep(time.Second)
		if !exists(t, configMapGVR, ns, "w-extra") || !exists(t, configMapGVR, ns, "w-base") {
			t.Fatal("a failed render deleted children")
		}
	})

	t.Run("a child no longer rendered is pruned", func(t *testing.T) {
		patch(t, widgetGVR, ns, "w", `{"spec":{"fail":null}}`)
		waitCondition(t, "widget", ns, "w", "True", "Reconciled", "")
		waitGone(t, configMapGVR, ns, "w-extra", 30*time.Second)
		if !exists(t, configMapGVR, ns, "w-base") || !exists(t, configMapGVR, ns, "w-bystander") {
			t.Fatal("pruning deleted a child still rendered, or an object that is not a child")
		}
	})
}

func TestScope(t *testing.T) {
	ns := env.Namespace(t)

	t.Run("a cluster-scoped child is refused without the opt-in", func(t *testing.T) {
		create(t, widgetGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  clusterRole: true\n")
		waitCondition(t, "widget", ns, "w", "False", "RenderFailed", "allowClusterScoped")
		if exists(t, clusterRoleGVR, "", ns+"-w") || exists(t, configMapGVR, ns, "w-base") {
			t.Fatal("children were applied although one was refused")
		}
	})

	t.Run("a lookup outside the namespace is refused", func(t *testing.T) {
		create(t, widgetGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Widget\nmetadata:\n  name: peek\nspec:\n  lookupNamespace: kube-system\n")
		waitCondition(t, "widget", ns, "peek", "False", "RenderFailed", "outside the parent's namespace")
	})

	t.Run("with the opt-in, a finalizer cleans up cluster-scoped children", func(t *testing.T) {
		create(t, gadgetGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Gadget\nmetadata:\n  name: g\n")
		waitCondition(t, "gadget", ns, "g", "True", "Reconciled", "")
		g, err := get(t.Context(), gadgetGVR, ns, "g")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range g.GetFinalizers() {
			found = found || f == reconcile.Finalizer
		}
		if !found || !exists(t, clusterRoleGVR, "", "gadget-"+ns+"-g") {
			t.Fatalf("finalizers %v; ClusterRole must exist", g.GetFinalizers())
		}
		if err := dyn.Resource(gadgetGVR).Namespace(ns).Delete(t.Context(), "g", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, clusterRoleGVR, "", "gadget-"+ns+"-g", 30*time.Second)
		waitGone(t, gadgetGVR, ns, "g", 30*time.Second)
	})
}
