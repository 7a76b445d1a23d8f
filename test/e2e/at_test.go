package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tmplop/operator/test/cluster"
)

var (
	atGVR  = cluster.GVR("cnat.programming-kubernetes.info", "v1alpha1", "ats")
	podGVR = cluster.GVR("", "v1", "pods")
	atGK   = schema.GroupKind{Group: "cnat.programming-kubernetes.info", Kind: "At"}
)

// TestAtTimeline drives the cnat At through PENDING -> RUNNING -> DONE: one
// timed requeue at the schedule, no reconcile in between.
func TestAtTimeline(t *testing.T) {
	ns := env.Namespace(t)
	stats := mgr.Stats(atGK)
	schedule := time.Now().Add(8 * time.Second).UTC().Truncate(time.Second)
	env.Create(t, atGVR, ns, fmt.Sprintf(`
apiVersion: cnat.programming-kubernetes.info/v1alpha1
kind: At
metadata:
  name: at
spec:
  schedule: %q
  command: echo YAY
`, schedule.Format(time.RFC3339)))

	phase := func(ctx context.Context) (string, error) {
		o, err := env.Get(ctx, atGVR, ns, "at")
		if err != nil {
			return "", err
		}
		p, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		return p, nil
	}
	cluster.Eventually(t, 5*time.Second, "PENDING", func(ctx context.Context) (bool, error) {
		p, err := phase(ctx)
		return p == "PENDING", err
	})
	settle(t, func() int64 { return stats.Reconciles.Load() })
	if time.Now().After(schedule.Add(-time.Second)) {
		t.Fatal("the At took too long to settle; the test cannot tell a requeue from a loop")
	}
	before, requeues := stats.Reconciles.Load(), stats.Requeues.Load()
	if _, err := env.Get(t.Context(), podGVR, ns, "at-pod"); err == nil {
		t.Fatal("a Pod exists before the schedule")
	}
	time.Sleep(time.Until(schedule) - 500*time.Millisecond)
	if n := stats.Reconciles.Load(); n != before {
		t.Fatalf("%d reconciles while waiting for the schedule, want none", n-before)
	}

	cluster.Eventually(t, 30*time.Second, "RUNNING after the schedule", func(ctx context.Context) (bool, error) {
		p, err := phase(ctx)
		return p == "RUNNING", err
	})
	pod, err := env.Get(t.Context(), podGVR, ns, "at-pod")
	if err != nil {
		t.Fatal(err)
	}
	if created := pod.GetCreationTimestamp().Time; created.Before(schedule) {
		t.Fatalf("Pod created at %s, before the schedule %s", created, schedule)
	}
	if got := stats.Requeues.Load() - requeues; got != 0 {
		t.Errorf("%d more timed requeues after the schedule, want none", got)
	}

	// No kubelet runs the command: the test ends the Pod, as a kubelet would
	// when the command exits 0. kwok leaves a Succeeded Pod alone.
	cluster.Eventually(t, 30*time.Second, "Pod Running", func(ctx context.Context) (bool, error) {
		p, err := env.Get(ctx, podGVR, ns, "at-pod")
		if err != nil {
			return false, err
		}
		ph, _, _ := unstructured.NestedString(p.Object, "status", "phase")
		return ph == "Running", nil
	})
	if _, err := env.Resource(podGVR, ns).Patch(t.Context(), "at-pod", types.MergePatchType,
		[]byte(`{"status":{"phase":"Succeeded"}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 30*time.Second, "DONE once the Pod Succeeded", func(ctx context.Context) (bool, error) {
		p, err := phase(ctx)
		return p == "DONE", err
	})
}
