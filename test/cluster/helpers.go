package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Namespace creates a namespace of its own for one test and deletes it when
// the test ends, so tests sharing a control plane never see each other's
// objects.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	name = strings.Trim(name, "-") + "-" + rand.String(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = c.cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// Eventually polls cond every 100ms until it returns true or timeout passes,
// then fails the test with what and the last error cond returned.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(ctx context.Context) (bool, error) {
			ok, err := cond(ctx)
			if err != nil {
				// An error caused by the deadline itself says nothing
				// about the condition: keep the one before it.
				if ctx.Err() == nil {
					last = err
				}
				return false, nil
			}
			return ok, nil
		})
	if err != nil {
		if last != nil {
			t.Fatalf("%s: not within %s: %v", what, timeout, last)
		}
		t.Fatalf("%s: not within %s", what, timeout)
	}
}

// String describes the control plane, for failure messages.
func (c *Cluster) String() string {
	return fmt.Sprintf("control plane at %s (kubeconfig %s)", c.Config.Host, c.Kubeconfig)
}
