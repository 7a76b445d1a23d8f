package e2e

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/test/cluster"
)

var helloworldGVR = cluster.GVR("test.jiaozi.com", "v1alpha1", "helloworlds")

// TestHelloWorld: status.nodes lists the names of the Pods, kept current as
// Pods come and go.
func TestHelloWorld(t *testing.T) {
	ns := env.Namespace(t)
	env.Create(t, helloworldGVR, ns, "apiVersion: test.jiaozi.com/v1alpha1\nkind: HelloWorld\nmetadata:\n  name: hw\nspec:\n  size: 2\n")
	nodesMatchPods := func(want int) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			var names []string
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil {
					names = append(names, p.Name)
				}
			}
			sort.Strings(names)
			o, err := env.Get(ctx, helloworldGVR, ns, "hw")
			if err != nil {
				return false, err
			}
			nodes, _, _ := unstructured.NestedStringSlice(o.Object, "status", "nodes")
			return len(names) == want && strings.Join(nodes, ",") == strings.Join(names, ","), nil
		}
	}
	cluster.Eventually(t, 60*time.Second, "status.nodes lists the 2 Pods", nodesMatchPods(2))
	env.Patch(t, helloworldGVR, ns, "hw", `{"spec":{"size":3}}`)
	cluster.Eventually(t, 60*time.Second, "status.nodes follows to 3 Pods", nodesMatchPods(3))
}

// TestValidation: the AppService CRD rejects a resource without spec.image
// before the operator ever sees it.
func TestValidation(t *testing.T) {
	ns := env.Namespace(t)
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte("apiVersion: app.example.com/v1\nkind: AppService\nmetadata:\n  name: noimage\nspec:\n  size: 1\n  ports: [{port: 80}]\n"), &u.Object); err != nil {
		t.Fatal(err)
	}
	_, err := env.Resource(appserviceGVR, ns).Create(t.Context(), u, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec.image") {
		t.Fatalf("create without spec.image: err = %v, want a rejection naming spec.image", err)
	}
}
