package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/test/cluster"
)

var mydaemonsetGVR = cluster.GVR("apps.zhongmingmao.io", "v1beta1", "mydaemonsets")

// TestMyDaemonSet: one Pod per Node, from a lookup of Nodes; a new Node gets
// its Pod through the lookup watch, with nothing else changing.
func TestMyDaemonSet(t *testing.T) {
	ns := env.Namespace(t)
	env.Create(t, mydaemonsetGVR, ns, `
apiVersion: apps.zhongmingmao.io/v1beta1
kind: MyDaemonSet
metadata:
  name: ds
spec:
  image: nginx:stable-alpine3.17
`)
	podsOn := func(ctx context.Context) (map[string]bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for _, p := range pods.Items {
			out[p.Spec.NodeName] = p.Status.Phase == corev1.PodRunning
		}
		return out, nil
	}
	nodes, err := cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 60*time.Second, "a Running Pod on every Node", func(ctx context.Context) (bool, error) {
		on, err := podsOn(ctx)
		return err == nil && len(on) == len(nodes.Items) && on[nodes.Items[0].Name], err
	})

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        "kwok-node-e2e",
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		Labels:      map[string]string{"type": "kwok"},
	}}
	if _, err := cs.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	cluster.Eventually(t, 60*time.Second, "a Pod on the new Node", func(ctx context.Context) (bool, error) {
		on, err := podsOn(ctx)
		_, ok := on[node.Name]
		return err == nil && ok && len(on) == len(nodes.Items)+1, err
	})
	cluster.Eventually(t, 60*time.Second, "status.availableReplicas counts them", func(ctx context.Context) (bool, error) {
		o, err := env.Get(ctx, mydaemonsetGVR, ns, "ds")
		if err != nil {
			return false, err
		}
		n, _, _ := unstructured.NestedInt64(o.Object, "status", "availableReplicas")
		return n == int64(len(nodes.Items)+1), nil
	})
}
