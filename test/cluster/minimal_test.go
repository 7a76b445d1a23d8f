package cluster_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tmplop/operator/test/cluster"
)

// TestMinimal: a minimal plane is a new one even when KUBECONFIG names the
// shared plane, runs API Priority and Fairness and no Node.
func TestMinimal(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(root, "hack", "cluster", ".run", "kubeconfig"))
	c, err := cluster.StartWith(cluster.Options{Minimal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if c.Kubeconfig == os.Getenv("KUBECONFIG") {
		t.Fatalf("minimal plane reuses the shared one (%s)", c.Kubeconfig)
	}
	cs := kubernetes.NewForConfigOrDie(c.Config)
	// FlowSchemas are served either way; only a running APF dispatches.
	metrics, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	if !strings.Contains(string(metrics), "apiserver_flowcontrol_dispatched_requests_total{") {
		t.Error("no apiserver_flowcontrol_dispatched_requests_total: API Priority and Fairness is off")
	}
	nodes, err := cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list Nodes: %v", err)
	}
	if len(nodes.Items) != 0 {
		t.Errorf("%d Nodes, want none on a minimal plane", len(nodes.Items))
	}
}
