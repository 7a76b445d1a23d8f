package cluster_test

import (
	"context"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/test/cluster"
)

var env *cluster.Cluster

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }

const smokeCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.smoke.example.com
spec:
  group: smoke.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties: {size: {type: integer}}
          status:
            type: object
            properties: {phase: {type: string}}
`

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = schema.GroupVersionResource{Group: "smoke.example.com", Version: "v1", Resource: "widgets"}
)

// TestControlPlane proves the test bed is a real control plane: server-side
// apply, status subresources, scheduling onto the kwok node and garbage
// collection all work.
func TestControlPlane(t *testing.T) {
	ctx := t.Context()
	dyn := dynamic.NewForConfigOrDie(env.Config)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ns := env.Namespace(t)

	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(smokeCRD), &crd.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(crdGVR).Apply(ctx, crd.GetName(), crd, metav1.ApplyOptions{FieldManager: "smoke", Force: true}); err != nil {
		t.Fatalf("apply CRD: %v", err)
	}
	cluster.Eventually(t, 30*time.Second, "CRD established", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(widgetGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		return err == nil, err
	})

	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "smoke.example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": ns},
		"spec":     map[string]any{"size": int64(3)},
	}}
	w, err := dyn.Resource(widgetGVR).Namespace(ns).Apply(ctx, "w1", w, metav1.ApplyOptions{FieldManager: "smoke"})
	if err != nil {
		t.Fatalf("apply Widget: %v", err)
	}
	t.Run("status subresource", func(t *testing.T) {
		st := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "smoke.example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w1", "namespace": ns},
			"status":   map[string]any{"phase": "Ready"},
		}}
		got, err := dyn.Resource(widgetGVR).Namespace(ns).ApplyStatus(ctx, "w1", st, metav1.ApplyOptions{FieldManager: "smoke"})
		if err != nil {
			t.Fatalf("apply status: %v", err)
		}
		if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Ready" {
			t.Errorf("status.phase = %q, want Ready", phase)
		}
		// A status in the main resource is ignored: that is what makes
		// the subresource a separate permission and a separate writer.
		got.Object["status"] = map[string]any{"phase": "Hacked"}
		got, err = dyn.Resource(widgetGVR).Namespace(ns).Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Ready" {
			t.Errorf("status.phase after a main-resource update = %q, want Ready", phase)
		}
	})

	t.Run("deployment runs on the kwok node", func(t *testing.T) {
		labels := map[string]string{"app": "smoke"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](3),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
				},
			},
		}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create deployment: %v", err)
		}
		cluster.Eventually(t, 60*time.Second, "3 ready replicas", func(ctx context.Context) (bool, error) {
			got, err := cs.AppsV1().Deployments(ns).Get(ctx, "smoke", metav1.GetOptions{})
			return err == nil && got.Status.ReadyReplicas == 3, err
		})
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=smoke"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
				t.Errorf("pod %s: node %q phase %s, want scheduled and Running", p.Name, p.Spec.NodeName, p.Status.Phase)
			}
		}
	})

	t.Run("garbage collection of owned objects", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "owned", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "smoke.example.com/v1", Kind: "Widget", Name: w.GetName(), UID: w.GetUID(),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create owned ConfigMap: %v", err)
		}
		if err := dyn.Resource(widgetGVR).Namespace(ns).Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete owner: %v", err)
		}
		cluster.Eventually(t, 60*time.Second, "owned ConfigMap collected", func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "owned", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	})
}
