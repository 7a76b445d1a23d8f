package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/test/cluster"
)

// TestNoWritesAtRest: with every example applied and converged, the
// operator sends no write request for a minute. It runs last (file order),
// after the other tests' objects have settled too.
func TestNoWritesAtRest(t *testing.T) {
	ns := env.Namespace(t)
	examples, err := filepath.Glob(filepath.Join(env.RepoRoot(), "examples", "*.yaml"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	args := []string{"-n", ns, "apply", "--server-side"}
	for _, e := range examples {
		args = append(args, "-f", e)
	}
	if out, err := env.Kubectl(t.Context(), args...); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cluster.Eventually(t, 60*time.Second, "every example Reconciled", func(ctx context.Context) (bool, error) {
		for _, res := range []struct{ gvr, name string }{
			{"memcached", "memcached-sample"}, {"appservice", "nginx-app"}, {"mydaemonset", "mydaemonset-sample"},
		} {
			r := map[string]any{"memcached": memcachedGVR, "appservice": appserviceGVR, "mydaemonset": mydaemonsetGVR}[res.gvr]
			o, err := env.Get(ctx, r.(schema.GroupVersionResource), ns, res.name)
			if err != nil {
				return false, err
			}
			if cluster.Condition(o, "Reconciled").Status != "True" {
				return false, nil
			}
		}
		return true, nil
	})
	// The other tests' namespaces are being deleted: their objects' last
	// reconciles are not "at rest".
	cluster.Eventually(t, 3*time.Minute, "other test namespaces deleted", func(ctx context.Context) (bool, error) {
		nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, n := range nss.Items {
			if n.Status.Phase == corev1.NamespaceTerminating {
				return false, nil
			}
		}
		return true, nil
	})
	settle(t, writes.Load)
	window := time.Minute
	if s := os.Getenv("REST_WINDOW"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			window = d
		}
	}
	before := writes.Load()
	time.Sleep(window)
	if n := writes.Load() - before; n != 0 {
		t.Fatalf("%d write requests in %s at rest, want 0; the last ones:\n%s", n, window, lastWrites())
	}
	t.Logf("0 write requests in %s at rest", window)
}
