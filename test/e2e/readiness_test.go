package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/test/cluster"
)

var (
	releaseGVR   = gvr("e2e.tmplop.io", "v1", "releases")
	jobGVR       = gvr("batch", "v1", "jobs")
	appserviceGK = schema.GroupKind{Group: "app.example.com", Kind: "AppService"}
)

// startRelease starts the test kind Release (testdata/templates/release:
// a migration Job, and a Deployment that dependsOn it) for one test.
func startRelease(t *testing.T) *reconcile.Stats {
	t.Helper()
	k, err := catalog.LoadKind("testdata/templates/release")
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Start(k); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Stop(k.GVK.GroupKind()) })
	return mgr.Stats(k.GVK.GroupKind())
}

// observe watches the objects of res in ns from now on, and returns each
// version of name the watch delivers: every status write, in order.
func observe(t *testing.T, res schema.GroupVersionResource, ns, name string) <-chan *unstructured.Unstructured {
	t.Helper()
	w, err := dyn.Resource(res).Namespace(ns).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	out := make(chan *unstructured.Unstructured, 1000)
	go func() {
		defer close(out)
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				out <- u
			}
		}
	}()
	return out
}

// until reads versions from ch until done returns true for one, and
// returns that one.
func until(t *testing.T, ch <-chan *unstructured.Unstructured, timeout time.Duration, what string, done func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case o, ok := <-ch:
			if !ok {
				t.Fatalf("%s: the watch ended", what)
			}
			if done(o) {
				return o
			}
		case <-deadline:
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}

// conditionGen returns a condition's status, reason, message and
// observedGeneration.
func conditionGen(obj *unstructured.Unstructured, typ string) (status, reason, message string, gen int64) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			g, _ := m["observedGeneration"].(int64)
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"]), g
		}
	}
	return "", "", "", 0
}

// TestReadyAppService: the shipped AppService reports Ready=False,
// Reconciling=True naming the Deployment while its Pods come up, Ready=True
// once the Deployment's replicas are available; kubectl wait works on it;
// a size change goes through the same; at rest nothing is written.
func TestReadyAppService(t *testing.T) {
	ns := env.Namespace(t)
	versions := observe(t, appserviceGVR, ns, "web")
	create(t, appserviceGVR, ns, `
apiVersion: app.example.com/v1
kind: AppService
metadata:
  name: web
spec:
  size: 2
  image: nginx:1.27
  ports:
  - port: 80
    targetPort: 80
`)
	sawProgress := false
	ready := until(t, versions, 90*time.Second, "Ready=True", func(o *unstructured.Unstructured) bool {
		st, reason, msg, gen := conditionGen(o, "Ready")
		if st == "" {
			return false
		}
		if gen != o.GetGeneration() {
			t.Errorf("Ready observedGeneration %d, object's generation %d", gen, o.GetGeneration())
		}
		if st == "True" {
			return true
		}
		rst, rreason, rmsg, _ := conditionGen(o, "Reconciling")
		if sst, _, _, _ := conditionGen(o, "Stalled"); sst != "" {
			t.Errorf("Stalled while the Pods come up: %v", o.Object["status"])
		}
		if reason == "ChildrenNotReady" && strings.Contains(msg, "Deployment/web ") && strings.Contains(msg, "/2 available") &&
			rst == "True" && rreason == "Progressing" && rmsg == msg {
			sawProgress = true
		}
		return false
	})
	if !sawProgress {
		t.Error("never saw Ready=False, Reconciling=True naming Deployment/web n/2 available")
	}
	if st, _, _, _ := conditionGen(ready, "Reconciling"); st != "" {
		t.Errorf("Reconciling still present once Ready: %v", ready.Object["status"])
	}
	d, err := get(t.Context(), deployGVR, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if avail, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas"); avail != 2 {
		t.Errorf("Ready=True with %d of 2 replicas available", avail)
	}
	if out, err := env.Kubectl(t.Context(), "-n", ns, "wait", "--for=condition=Ready", "appservice/web", "--timeout=60s"); err != nil {
		t.Fatalf("kubectl wait --for=condition=Ready: %v: %s", err, out)
	}

	t.Run("a size change is Ready again only with the new replicas", func(t *testing.T) {
		patch(t, appserviceGVR, ns, "web", `{"spec":{"size":3}}`)
		sawProgress := false
		until(t, versions, 90*time.Second, "Ready=True at generation 2", func(o *unstructured.Unstructured) bool {
			st, _, msg, gen := conditionGen(o, "Ready")
			if gen != 2 {
				return false
			}
			if st == "False" && strings.Contains(msg, "Deployment/web ") {
				sawProgress = true
			}
			return st == "True"
		})
		if !sawProgress {
			t.Error("the size change never showed Ready=False naming the Deployment")
		}
		d, err := get(t.Context(), deployGVR, ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		if avail, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas"); avail != 3 {
			t.Errorf("Ready=True with %d of 3 replicas available", avail)
		}
	})

	t.Run("at rest nothing is written; a child's change that changes nothing writes nothing", func(t *testing.T) {
		stats := mgr.Stats(appserviceGK)
		settle(t, stats.Writes)
		kindWrites, statusOnly, wire := stats.Writes(), stats.StatusOnly.Load(), writes.Load()
		// Someone labels the Deployment: its resourceVersion changes, not
		// its generation (an annotation would change that too): the
		// status-only path judges it again, and finds the status as it is.
		patch(t, deployGVR, ns, "web", `{"metadata":{"labels":{"e2e.tmplop.io/touched":"yes"}}}`)
		cluster.Eventually(t, 30*time.Second, "a status-only reconcile", func(context.Context) (bool, error) {
			return stats.StatusOnly.Load() > statusOnly, nil
		})
		time.Sleep(3 * time.Second)
		// At the wire (writeCounter): no request of the engine's touches
		// this namespace. Other tests' namespaces may still be going away.
		if n := writes.Load() - wire; n > 0 {
			recent := strings.Split(lastWrites(), "\n")
			if int(n) < len(recent) {
				recent = recent[len(recent)-int(n):]
			}
			for _, w := range recent {
				if strings.Contains(w, "/namespaces/"+ns+"/") {
					t.Errorf("a write at rest: %s", w)
				}
			}
		}
		if n := stats.Writes() - kindWrites; n != 0 {
			for len(versions) > 0 {
				o := <-versions
				t.Logf("version %s: %v", o.GetResourceVersion(), o.Object["status"])
			}
			t.Fatalf("%d writes of the AppService kind at rest; the last writes:\n%s", n, lastWrites())
		}
	})
}

// TestReadyOrder: the Deployment of a Release waits for its migration Job:
// it does not exist while the Job has not completed, the Release says what
// waits for what, and it is applied once the Job completed.
func TestReadyOrder(t *testing.T) {
	startRelease(t)
	ns := env.Namespace(t)
	create(t, releaseGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Release\nmetadata:\n  name: r\nspec:\n  suspend: true\n")
	cluster.Eventually(t, 60*time.Second, "Reconciling names the wait", func(ctx context.Context) (bool, error) {
		o, err := get(ctx, releaseGVR, ns, "r")
		if err != nil {
			return false, err
		}
		st, reason, msg, _ := conditionGen(o, "Reconciling")
		rst, rreason, _, _ := conditionGen(o, "Ready")
		return st == "True" && reason == "WaitingForDependencies" && rst == "False" && rreason == "WaitingForDependencies" &&
			strings.Contains(msg, "deployment.yaml waits for migrate-job.yaml (Job/r-migrate: InProgress: suspended)"), nil
	})
	if _, err := get(t.Context(), jobGVR, ns, "r-migrate"); err != nil {
		t.Fatalf("the Job: %v", err)
	}
	time.Sleep(2 * time.Second)
	if _, err := get(t.Context(), deployGVR, ns, "r"); err == nil {
		t.Fatal("the Deployment exists while the Job it depends on is suspended")
	}

	patch(t, releaseGVR, ns, "r", `{"spec":{"suspend":false}}`)
	var dep *unstructured.Unstructured
	cluster.Eventually(t, 90*time.Second, "the Deployment, after the Job", func(ctx context.Context) (bool, error) {
		d, err := get(ctx, deployGVR, ns, "r")
		if err != nil {
			return false, nil
		}
		dep = d
		return true, nil
	})
	job, err := get(t.Context(), jobGVR, ns, "r-migrate")
	if err != nil {
		t.Fatal(err)
	}
	completed, _, _ := unstructured.NestedString(job.Object, "status", "completionTime")
	done, err := time.Parse(time.RFC3339, completed)
	if err != nil {
		t.Fatalf("the Deployment exists and the Job has not completed: %v", job.Object["status"])
	}
	if dep.GetCreationTimestamp().Time.Before(done) {
		t.Errorf("the Deployment was created at %s, before the Job completed at %s", dep.GetCreationTimestamp(), done)
	}
	cluster.Eventually(t, 90*time.Second, "the Release Ready", func(ctx context.Context) (bool, error) {
		o, err := get(ctx, releaseGVR, ns, "r")
		if err != nil {
			return false, err
		}
		st, _, _, _ := conditionGen(o, "Ready")
		rst, _, _, _ := conditionGen(o, "Reconciling")
		ready, _, _ := unstructured.NestedBool(o.Object, "status", "ready")
		job, _, _ := unstructured.NestedString(o.Object, "status", "jobHealth")
		return st == "True" && rst == "" && ready && job == "Current", nil
	})
}

// TestReadyFailedJob: a Job that fails makes its parent Ready=False with the
// Job's own reason, and Stalled=True (ChildFailed); what waits for it is
// never applied.
func TestReadyFailedJob(t *testing.T) {
	startRelease(t)
	ns := env.Namespace(t)
	create(t, releaseGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Release\nmetadata:\n  name: f\nspec:\n  failJob: true\n")
	cluster.Eventually(t, 90*time.Second, "Ready=False with the Job's reason, Stalled=True", func(ctx context.Context) (bool, error) {
		o, err := get(ctx, releaseGVR, ns, "f")
		if err != nil {
			return false, err
		}
		st, reason, msg, _ := conditionGen(o, "Ready")
		sst, sreason, _, _ := conditionGen(o, "Stalled")
		rst, _, _, _ := conditionGen(o, "Reconciling")
		job, _, _ := unstructured.NestedString(o.Object, "status", "jobHealth")
		return st == "False" && reason == "DeadlineExceeded" && strings.Contains(msg, "Job/f-migrate failed: ") &&
			sst == "True" && sreason == "ChildFailed" && rst == "" && job == "Failed", nil
	})
	if _, err := get(t.Context(), deployGVR, ns, "f"); err == nil {
		t.Fatal("the Deployment was applied although the Job it depends on failed")
	}
}

// TestReadyStalledRenderFailure: a template error is a failure no retry
// fixes: Stalled=True with RenderFailed, Ready=False, no Reconciling.
func TestReadyStalledRenderFailure(t *testing.T) {
	startRelease(t)
	ns := env.Namespace(t)
	create(t, releaseGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Release\nmetadata:\n  name: bad\nspec:\n  fail: true\n")
	cluster.Eventually(t, 60*time.Second, "Stalled=True, RenderFailed", func(ctx context.Context) (bool, error) {
		o, err := get(ctx, releaseGVR, ns, "bad")
		if err != nil {
			return false, err
		}
		st, reason, msg, gen := conditionGen(o, "Stalled")
		rst, rreason, _, _ := conditionGen(o, "Ready")
		pst, _, _, _ := conditionGen(o, "Reconciling")
		return st == "True" && reason == "RenderFailed" && strings.Contains(msg, "deployment.yaml:1: spec.fail is set") && gen == o.GetGeneration() &&
			rst == "False" && rreason == "RenderFailed" && pst == "", nil
	})
	// Fixed, it recovers: Stalled goes, and the Job is applied.
	patch(t, releaseGVR, ns, "bad", `{"spec":{"fail":null}}`)
	cluster.Eventually(t, 60*time.Second, "Stalled gone after the fix", func(ctx context.Context) (bool, error) {
		o, err := get(ctx, releaseGVR, ns, "bad")
		if err != nil {
			return false, err
		}
		st, _, _, _ := conditionGen(o, "Stalled")
		_, err = get(ctx, jobGVR, ns, "bad-migrate")
		return st == "" && err == nil, nil
	})
}
