package safety

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tmplop/operator/test/cluster"
)

// TestPruneAfterRestart: a template removed while the operator was down must
// still have its children pruned by the next operator. The new process
// renders no Secret and has never applied one, so only the inventory (the
// record, in the cluster, of the kinds of children each kind has applied)
// tells it that Secrets are children to look for.
//
// Before these guards existed, a restarted operator never pruned the Secret:
// the prune looked only at the kinds the current templates render, so the
// Secret stayed forever, owned by a parent that no longer rendered it.
func TestPruneAfterRestart(t *testing.T) {
	const (
		manager   = "safety-restart"
		inventory = manager + "-inventory"
	)
	secretGVR := cluster.GVR("", "v1", "secrets")

	// The record must be A's doing, not a leftover of an earlier run on a
	// shared control plane.
	err := cs.CoreV1().ConfigMaps("default").Delete(t.Context(), inventory, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	templates := t.TempDir()
	folder := filepath.Join(templates, "restart")
	procCopyFolder(t, filepath.Join("testdata", "restart", "v1", "restart"), folder)
	ns := env.Namespace(t)

	a := procStart(t, manager, templates, env.Kubeconfig)
	env.CreateSpec(t, procRestart.res, procRestart.kind, ns, "r", map[string]any{})
	cluster.Eventually(t, 30*time.Second, "v1 children", func(ctx context.Context) (bool, error) {
		for _, res := range []struct{ what, resource string }{{"ConfigMap", "configmaps"}, {"Secret", "secrets"}} {
			if _, err := env.Get(ctx, cluster.GVR("", "v1", res.resource), ns, "r"); err != nil {
				return false, fmt.Errorf("%s: %w", res.what, err)
			}
		}
		return true, nil
	})
	env.WaitReconciled(t, procRestart.res, ns, "r")
	cm, err := env.Get(t.Context(), configMapGVR, ns, "r")
	if err != nil {
		t.Fatal(err)
	}
	took := procStop(t, a, 30*time.Second)
	t.Logf("operator A (v1) exited 0 %s after SIGTERM", took.Round(time.Millisecond))

	// v2 drops the Secret while no operator runs.
	if err := os.RemoveAll(folder); err != nil {
		t.Fatal(err)
	}
	procCopyFolder(t, filepath.Join("testdata", "restart", "v2", "restart"), folder)

	start := time.Now()
	b := procStart(t, manager, templates, env.Kubeconfig)
	cluster.Eventually(t, 30*time.Second, "operator B prunes the Secret v2 no longer renders", func(ctx context.Context) (bool, error) {
		_, err := env.Get(ctx, secretGVR, ns, "r")
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			err = errors.New("the Secret still exists")
		}
		return false, err
	})
	t.Logf("operator B pruned the Secret %s after it started", time.Since(start).Round(time.Millisecond))
	procAlive(t, b, "after the prune")

	// The ConfigMap stays: the same object, not deleted and re-created.
	got, err := env.Get(t.Context(), configMapGVR, ns, "r")
	if err != nil {
		t.Fatalf("ConfigMap after B's prune: %v", err)
	}
	if got.GetUID() != cm.GetUID() {
		t.Errorf("ConfigMap re-created (uid %s, was %s), want it kept", got.GetUID(), cm.GetUID())
	}
	env.WaitReconciled(t, procRestart.res, ns, "r")

	rec, err := cs.CoreV1().ConfigMaps("default").Get(t.Context(), inventory, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("inventory ConfigMap default/%s: %v", inventory, err)
	}
	const key = "Restart.safety.tmplop.io_Secret"
	if _, ok := rec.Data[key]; !ok {
		t.Errorf("inventory ConfigMap default/%s has no key %s (the record that lets B prune); data: %v", inventory, key, rec.Data)
	}
	procStop(t, b, 30*time.Second)
}

// procCopyFolder copies the files of src into dst, which it creates.
func procCopyFolder(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}
