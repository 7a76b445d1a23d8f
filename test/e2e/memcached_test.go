package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tmplop/operator/test/cluster"
)

var memcachedGK = schema.GroupKind{Group: "cache.example.com", Kind: "Memcached"}

func memcached(name string, size int) string {
	m := "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: " + name + "\n"
	if size >= 0 {
		m += "spec:\n  size: " + string(rune('0'+size)) + "\n"
	} else {
		m += "spec: {}\n"
	}
	return m
}

func TestMemcached(t *testing.T) {
	ns := env.Namespace(t)
	mc := env.Create(t, memcachedGVR, ns, memcached("mc", 3))

	cluster.Eventually(t, 60*time.Second, "a 3-replica Deployment owned by the Memcached", func(ctx context.Context) (bool, error) {
		d, err := env.Get(ctx, deployGVR, ns, "mc")
		if err != nil {
			return false, err
		}
		r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		owner := metav1.GetControllerOf(d)
		return r == 3 && owner != nil && owner.UID == mc.GetUID(), nil
	})
	waitStatus(t, ns, "mc", 3)

	t.Run("size change is followed", func(t *testing.T) {
		env.Patch(t, memcachedGVR, ns, "mc", `{"spec":{"size":5}}`)
		waitStatus(t, ns, "mc", 5)
	})

	t.Run("a status-only change causes no reconcile", func(t *testing.T) {
		stats := mgr.Stats(memcachedGK)
		settle(t, func() int64 { return stats.Reconciles.Load() })
		before := stats.Reconciles.Load()
		_, err := env.Resource(memcachedGVR, ns).Patch(t.Context(), "mc", types.MergePatchType,
			[]byte(`{"status":{"nodes":["someone-else-wrote-this"]}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		if after := stats.Reconciles.Load(); after != before {
			t.Fatalf("reconciles went from %d to %d after a status-only change", before, after)
		}
	})

	t.Run("drift is repaired", func(t *testing.T) {
		env.Patch(t, deployGVR, ns, "mc", `{"spec":{"replicas":1}}`)
		cluster.Eventually(t, 30*time.Second, "replicas restored to 5", func(ctx context.Context) (bool, error) {
			d, err := env.Get(ctx, deployGVR, ns, "mc")
			if err != nil {
				return false, err
			}
			r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			return r == 5, nil
		})
		old, err := env.Get(t.Context(), deployGVR, ns, "mc")
		if err != nil {
			t.Fatal(err)
		}
		env.Delete(t, deployGVR, ns, "mc")
		cluster.Eventually(t, 30*time.Second, "deleted Deployment re-created", func(ctx context.Context) (bool, error) {
			d, err := env.Get(ctx, deployGVR, ns, "mc")
			return err == nil && d.GetUID() != old.GetUID() && d.GetDeletionTimestamp() == nil, nil
		})
		waitStatus(t, ns, "mc", 5)
	})

	t.Run("deleting the Memcached collects its children", func(t *testing.T) {
		env.Delete(t, memcachedGVR, ns, "mc")
		env.WaitGone(t, deployGVR, ns, "mc", 90*time.Second)
	})
}

func TestMemcachedWithoutSize(t *testing.T) {
	ns := env.Namespace(t)
	env.Create(t, memcachedGVR, ns, memcached("good", 2))
	env.Create(t, memcachedGVR, ns, memcached("nosize", -1))

	cluster.Eventually(t, 30*time.Second, "RenderFailed naming the file and line", func(ctx context.Context) (bool, error) {
		o, err := env.Get(ctx, memcachedGVR, ns, "nosize")
		if err != nil {
			return false, err
		}
		c := cluster.Condition(o, "Reconciled")
		return c.Status == "False" && c.Reason == "RenderFailed" &&
			strings.Contains(c.Message, "deployment.yaml:") && strings.Contains(c.Message, "spec.size is required"), nil
	})
	cluster.Eventually(t, 30*time.Second, "a Warning Event on the object", func(ctx context.Context) (bool, error) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.name": "nosize", "reason": "RenderFailed"}.String()})
		return err == nil && len(evs.Items) > 0 && evs.Items[0].Type == corev1.EventTypeWarning, err
	})
	if _, err := env.Get(t.Context(), deployGVR, ns, "nosize"); err == nil {
		t.Error("a Deployment was created for a Memcached whose render failed")
	}
	waitStatus(t, ns, "good", 2)
}

// waitStatus waits for the Memcached to report size ready replicas and a
// Reconciled=True condition for its current generation.
func waitStatus(t *testing.T, ns, name string, size int64) {
	t.Helper()
	cluster.Eventually(t, 60*time.Second, "status reports the ready replicas", func(ctx context.Context) (bool, error) {
		o, err := env.Get(ctx, memcachedGVR, ns, name)
		if err != nil {
			return false, err
		}
		ready, _, _ := unstructured.NestedInt64(o.Object, "status", "readyReplicas")
		nodes, _, _ := unstructured.NestedStringSlice(o.Object, "status", "nodes")
		return ready == size && cluster.ObservedGeneration(o) == o.GetGeneration() &&
			cluster.Condition(o, "Reconciled").Status == "True" && int64(len(nodes)) == size, nil
	})
}

// settle waits until counter has not moved for two seconds.
func settle(t *testing.T, counter func() int64) {
	t.Helper()
	last, since := counter(), time.Now()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if c := counter(); c != last {
			last, since = c, time.Now()
		} else if time.Since(since) > 2*time.Second {
			return
		}
	}
	t.Fatal("the operator did not settle within 60s")
}
