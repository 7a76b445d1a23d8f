package e2e

import (
	"context"
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
	releaseGVR   = cluster.GVR("e2e.tmplop.io", "v1", "releases")
	jobGVR       = cluster.GVR("batch", "v1", "jobs")
	appserviceGK = schema.GroupKind{Group: "app.example.com", Kind: "AppService"}
)

// startRelease starts the test kind Release (testdata/templates/release:
// a migration Job, and a Deployment that dependsOn it) for one test.
func startRelease(t *testing.T) *reconcile.Stats {
	t.Helper()
	return startKind(t, "testdata/templates/release")
}

// startKind serves the kind folder dir (a test kind of testdata) for one
// test, and returns its counters.
func startKind(t *testing.T, dir string) *reconcile.Stats {
	t.Helper()
	k, err := catalog.LoadKind(dir)
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
	w, err := env.Resource(res, ns).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
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

// TestReadyAppService: the shipped AppService reports Ready=False,
// Reconciling=True naming the Deployment while its Pods come up, Ready=True
// once the Deployment's replicas are available; kubectl wait works on it;
// a size change goes through the same; at rest nothing is written.
func TestReadyAppService(t *testing.T) {
	ns := env.Namespace(t)
	versions := observe(t, appserviceGVR, ns, "web")
	env.Create(t, appserviceGVR, ns, `
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
		r := cluster.Condition(o, "Ready")
		if r.Status == "" {
			return false
		}
		if r.ObservedGeneration != o.GetGeneration() {
			t.Errorf("Ready observedGeneration %d, object's generation %d", r.ObservedGeneration, o.GetGeneration())
		}
		if r.Status == "True" {
			return true
		}
		p := cluster.Condition(o, "Reconciling")
		if cluster.Condition(o, "Stalled").Status != "" {
			t.Errorf("Stalled while the Pods come up: %v", o.Object["status"])
		}
		if r.Reason == "ChildrenNotReady" && strings.Contains(r.Message, "Deployment/web ") && strings.Contains(r.Message, "/2 available") &&
			p.Status == "True" && p.Reason == "Progressing" && p.Message == r.Message {
			sawProgress = true
		}
		return false
	})
	if !sawProgress {
		t.Error("never saw Ready=False, Reconciling=True naming Deployment/web n/2 available")
	}
	if cluster.Condition(ready, "Reconciling").Status != "" {
		t.Errorf("Reconciling still present once Ready: %v", ready.Object["status"])
	}
	d, err := env.Get(t.Context(), deployGVR, ns, "web")
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
		env.Patch(t, appserviceGVR, ns, "web", `{"spec":{"size":3}}`)
		sawProgress := false
		until(t, versions, 90*time.Second, "Ready=True at generation 2", func(o *unstructured.Unstructured) bool {
			r := cluster.Condition(o, "Ready")
			if r.ObservedGeneration != 2 {
				return false
			}
			if r.Status == "False" && strings.Contains(r.Message, "Deployment/web ") {
				sawProgress = true
			}
			return r.Status == "True"
		})
		if !sawProgress {
			t.Error("the size change never showed Ready=False naming the Deployment")
		}
		d, err := env.Get(t.Context(), deployGVR, ns, "web")
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
		kindWrites, reconciles, wire := stats.Writes(), stats.Reconciles.Load(), writes.Load()
		// Someone labels the Deployment: its resourceVersion changes, not
		// its generation (an annotation would change that too): its parent
		// is reconciled again, and finds its children and status as they
		// are.
		env.Patch(t, deployGVR, ns, "web", `{"metadata":{"labels":{"e2e.tmplop.io/touched":"yes"}}}`)
		cluster.Eventually(t, 30*time.Second, "a reconcile of the parent", func(context.Context) (bool, error) {
			return stats.Reconciles.Load() > reconciles, nil
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
	env.Create(t, releaseGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Release\nmetadata:\n  name: r\nspec:\n  suspend: true\n")
	cluster.Eventually(t, 60*time.Second, "Reconciling names the wait", func(ctx context.Context) (bool, error) {
		o, err := env.Get(ctx, releaseGVR, ns, "r")
		if err != nil {
			return false, err
		}
		p, r := cluster.Condition(o, "Reconciling"), cluster.Condition(o, "Ready")
		return p.Status == "True" && p.Reason == "WaitingForDependencies" && r.Status == "False" && r.Reason == "WaitingForDependencies" &&
			strings.Contains(p.Message, "deployment.yaml waits for migrate-job.yaml (Job/r-migrate: InProgress: suspended)"), nil
	})
	if _, err := env.Get(t.Context(), jobGVR, ns, "r-migrate"); err != nil {
		t.Fatalf("the Job: %v", err)
	}
	time.Sleep(2 * time.Second)
	if _, err := env.Get(t.Context(), deployGVR, ns, "r"); err == nil {
		t.Fatal("the Deployment exists while the Job it depends on is suspended")
	}

	env.Patch(t, releaseGVR, ns, "r", `{"spec":{"suspend":false}}`)
	var dep *unstructured.Unstructured
	cluster.Eventually(t, 90*time.Second, "the Deployment, after the Job", func(ctx context.Context) (bool, error) {
		d, err := env.Get(ctx, deployGVR, ns, "r")
		if err != nil {
			return false, nil
		}
		dep = d
		return true, nil
	})
	job, err := env.Get(t.Context(), jobGVR, ns, "r-migrate")
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
		o, err := env.Get(ctx, releaseGVR, ns, "r")
		if err != nil {
			return false, err
		}
		ready, _, _ := unstructured.NestedBool(o.Object, "status", "ready")
		job, _, _ := unstructured.NestedString(o.Object, "status", "jobHealth")
		return cluster.Condition(o, "Ready").Status == "True" && cluster.Condition(o, "Reconciling").Status == "" && ready && job == "Current", nil
	})
}

// TestReadyFailedJob: a Job that fails makes its parent Ready=False with the
// Job's own reason, and Stalled=True (ChildFailed); what waits for it is
// never applied.
func TestReadyFailedJob(t *testing.T) {
	startRelease(t)
	ns := env.Namespace(t)
	env.Create(t, releaseGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Release\nmetadata:\n  name: f\nspec:\n  failJob: true\n")
	cluster.Eventually(t, 90*time.Second, "Ready=False with the Job's reason, Stalled=True", func(ctx context.Context) (bool, error) {
		o, err := env.Get(ctx, releaseGVR, ns, "f")
		if err != nil {
			return false, err
		}
		r, s, p := cluster.Condition(o, "Ready"), cluster.Condition(o, "Stalled"), cluster.Condition(o, "Reconciling")
		job, _, _ := unstructured.NestedString(o.Object, "status", "jobHealth")
		return r.Status == "False" && r.Reason == "DeadlineExceeded" && strings.Contains(r.Message, "Job/f-migrate failed: ") &&
			s.Status == "True" && s.Reason == "ChildFailed" && p.Status == "" && job == "Failed", nil
	})
	if _, err := env.Get(t.Context(), deployGVR, ns, "f"); err == nil {
		t.Fatal("the Deployment was applied although the Job it depends on failed")
	}
}

// TestReadyStalledRenderFailure: a template error is a failure no retry
// fixes: Stalled=True with RenderFailed, Ready=False, no Reconciling.
func TestReadyStalledRenderFailure(t *testing.T) {
	startRelease(t)
	ns := env.Namespace(t)
	env.Create(t, releaseGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Release\nmetadata:\n  name: bad\nspec:\n  fail: true\n")
	cluster.Eventually(t, 60*time.Second, "Stalled=True, RenderFailed", func(ctx context.Context) (bool, error) {
		o, err := env.Get(ctx, releaseGVR, ns, "bad")
		if err != nil {
			return false, err
		}
		s, r, p := cluster.Condition(o, "Stalled"), cluster.Condition(o, "Ready"), cluster.Condition(o, "Reconciling")
		return s.Status == "True" && s.Reason == "RenderFailed" && strings.Contains(s.Message, "deployment.yaml:1: spec.fail is set") &&
			s.ObservedGeneration == o.GetGeneration() && r.Status == "False" && r.Reason == "RenderFailed" && p.Status == "", nil
	})
	// Fixed, it recovers: Stalled goes, and the Job is applied.
	env.Patch(t, releaseGVR, ns, "bad", `{"spec":{"fail":null}}`)
	cluster.Eventually(t, 60*time.Second, "Stalled gone after the fix", func(ctx context.Context) (bool, error) {
		o, err := env.Get(ctx, releaseGVR, ns, "bad")
		if err != nil {
			return false, err
		}
		_, err = env.Get(ctx, jobGVR, ns, "bad-migrate")
		return cluster.Condition(o, "Stalled").Status == "" && err == nil, nil
	})
}
