package author

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/migrate"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

var (
	memcachedsV1alpha1 = cluster.GVR("cache.example.com", "v1alpha1", "memcacheds")
	memcachedsV1       = cluster.GVR("cache.example.com", "v1", "memcacheds")
)

// TestVersions evolves the tutorial's Memcached on the API server, as
// docs/versions.md does: objects made at cache.example.com/v1alpha1
// (spec.size); then the folder gains v1 (spec.replicas) as its hub and
// storage version, with its conversion templates, served by the operator's
// webhook, which the API server calls. Every object then reads at both
// versions, new objects may be written at either, the stored objects are
// migrated and storedVersions pruned, and not one child is written. With
// the operator stopped, a read at v1alpha1 is the API server's clear error
// (and v1, the storage version, still reads); started again, on another
// port, it serves v1alpha1 again. Then v1alpha1 stops being served.
func TestVersions(t *testing.T) {
	ctx := context.Background()
	const crdName = "memcacheds.cache.example.com"
	if _, err := env.Kubectl(ctx, "delete", "crd", crdName, "--ignore-not-found", "--wait=true", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = env.Kubectl(context.Background(), "delete", "crd", crdName, "--wait=false") })
	ns := env.Namespace(t)
	templates := t.TempDir()
	folder := filepath.Join(templates, "memcached")
	if err := os.CopyFS(folder, os.DirFS(filepath.Join(env.RepoRoot(), "templates", "memcached"))); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--kubeconfig", env.Kubeconfig, "--templates", templates, "--install-crds",
		"--namespace", ns, "--state-namespace", ns, "--field-manager", "author-versions", "--webhook-bind-address", "127.0.0.1:0"}
	op := harness.StartOperator(t, bin, args...)
	liveWaitOutput(t, op, 60*time.Second, "Serving kind")

	t.Log("Memcached objects at v1alpha1, each with its Deployment")
	sizes := map[string]int64{"m0": 1, "m1": 2, "m2": 0}
	for name, size := range sizes {
		env.CreateSpec(t, memcachedsV1alpha1, "Memcached", ns, name, map[string]any{"size": size})
	}
	for name, size := range sizes {
		versionsWaitDeployment(t, ns, name, size)
	}
	before := versionsDeployments(t, ns)

	t.Log("the folder gains v1, the hub and storage version, with its conversions")
	if err := os.RemoveAll(folder); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(folder, os.DirFS(filepath.Join(env.RepoRoot(), "examples", "versions", "templates", "memcached"))); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 90*time.Second, "the CRD serves both versions, its objects migrated to v1", func(context.Context) (bool, error) {
		crd := installGetCRD(t, crdName)
		c := versionsCondition(crd, migrate.ConditionType)
		switch {
		case len(crd.Spec.Versions) != 2:
			return false, fmt.Errorf("versions %d", len(crd.Spec.Versions))
		case crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter:
			return false, fmt.Errorf("conversion %+v", crd.Spec.Conversion)
		case c == nil || c.Status != apiextensionsv1.ConditionTrue:
			return false, fmt.Errorf("condition %s: %+v", migrate.ConditionType, c)
		case !slices.Equal(crd.Status.StoredVersions, []string{"v1"}):
			return false, fmt.Errorf("storedVersions %v", crd.Status.StoredVersions)
		}
		return true, nil
	})

	t.Log("every object reads at both versions")
	for name, size := range sizes {
		a := versionsGet(t, memcachedsV1alpha1, ns, name)
		b := versionsGet(t, memcachedsV1, ns, name)
		if got, _, _ := unstructured.NestedInt64(a.Object, "spec", "size"); got != size {
			t.Errorf("%s at v1alpha1: spec.size %d, want %d (%v)", name, got, size, a.Object["spec"])
		}
		if got, _, _ := unstructured.NestedInt64(b.Object, "spec", "replicas"); got != size {
			t.Errorf("%s at v1: spec.replicas %d, want %d (%v)", name, got, size, b.Object["spec"])
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(b.Object, "spec", "size"); found {
			t.Errorf("%s at v1 has spec.size: %v", name, b.Object["spec"])
		}
	}

	t.Log("new objects may be written at either version")
	env.CreateSpec(t, memcachedsV1, "Memcached", ns, "n-v1", map[string]any{"replicas": int64(4)})
	env.CreateSpec(t, memcachedsV1alpha1, "Memcached", ns, "n-v1alpha1", map[string]any{"size": int64(5)})
	versionsWaitDeployment(t, ns, "n-v1", 4)
	versionsWaitDeployment(t, ns, "n-v1alpha1", 5)
	env.WaitReconciled(t, memcachedsV1, ns, "m0")

	t.Log("not one child of the objects made before was written")
	after := versionsDeployments(t, ns)
	for name, was := range before {
		if after[name] != was {
			t.Errorf("Deployment %s written:\n now %s\n was %s", name, after[name], was)
		}
	}

	t.Log("the operator stopped: a read at v1alpha1 fails with the API server's clear error; served again once it is back")
	if err := op.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, _, err := op.Wait(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	_, err := env.Resource(memcachedsV1alpha1, ns).Get(ctx, "m0", metav1.GetOptions{})
	if err == nil || !strings.Contains(err.Error(), "conversion webhook") {
		t.Errorf("read at v1alpha1 with the webhook down: %v, want the API server's conversion webhook error", err)
	} else {
		t.Logf("with the webhook down: %v", err)
	}
	versionsGet(t, memcachedsV1, ns, "m0") // stored at v1: no conversion
	op = harness.StartOperator(t, bin, args...)
	cluster.Eventually(t, 60*time.Second, "v1alpha1 served again", func(ctx context.Context) (bool, error) {
		u, err := env.Resource(memcachedsV1alpha1, ns).Get(ctx, "m0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size"); size != 1 {
			return false, fmt.Errorf("spec.size %d, want 1", size)
		}
		return true, nil
	})

	t.Log("v1alpha1 stops being served")
	kindYAML := filepath.Join(folder, "kind.yaml")
	data, err := os.ReadFile(kindYAML)
	if err != nil {
		t.Fatal(err)
	}
	off := strings.Replace(string(data), "  - name: v1alpha1\n", "  - name: v1alpha1\n    served: false\n", 1)
	if off == string(data) {
		t.Fatal("testdata kind.yaml lists no v1alpha1")
	}
	if err := os.WriteFile(kindYAML, []byte(off), 0o644); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 60*time.Second, "v1alpha1 no longer served", func(ctx context.Context) (bool, error) {
		_, err := env.Resource(memcachedsV1alpha1, ns).Get(ctx, "m0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("get at v1alpha1: %v", err)
	})
	if got, _, _ := unstructured.NestedInt64(versionsGet(t, memcachedsV1, ns, "m1").Object, "spec", "replicas"); got != 2 {
		t.Errorf("m1 at v1 after v1alpha1 went: spec.replicas %d, want 2", got)
	}
}

func versionsGet(t *testing.T, res schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := env.Resource(res, ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", res.Version, ns, name, err)
	}
	return u
}

// versionsWaitDeployment waits for the Memcached's Deployment with replicas.
func versionsWaitDeployment(t *testing.T, ns, name string, replicas int64) {
	t.Helper()
	cluster.Eventually(t, 60*time.Second, "Deployment "+name, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if d.Spec.Replicas == nil || int64(*d.Spec.Replicas) != replicas {
			return false, fmt.Errorf("replicas %v, want %d", d.Spec.Replicas, replicas)
		}
		return true, nil
	})
}

// versionsDeployments are what the operator writes of ns's Deployments
// (their spec, generation, owner references, labels and annotations), by
// name: the resourceVersion moves with the Deployment controller's status
// writes too.
func versionsDeployments(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := cs.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range list.Items {
		b, err := json.Marshal([]any{d.Generation, d.OwnerReferences, d.Labels, d.Annotations, d.Spec})
		if err != nil {
			t.Fatal(err)
		}
		out[d.Name] = string(b)
	}
	return out
}

func versionsCondition(crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == typ {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}
