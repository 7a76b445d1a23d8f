package safety

import (
	"context"
	"testing"
	"time"

	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// TestRandomDoesNotLoop: a child that renders randAlphaNum changes on
// every render. Before, the echo of each apply reconciled the parent again,
// which rendered a new value and applied it: an endless write loop. Now
// the echo of the operator's own write is dropped, and a reconcile caused
// by anything else finds that the child renders differently from the very
// same input, reports it and leaves the child alone.
func TestRandomDoesNotLoop(t *testing.T) {
	ns := env.Namespace(t)
	randoms := safetyGVR("randoms")
	env.Create(t, randoms, ns, "apiVersion: safety.tmplop.io/v1\nkind: Random\nmetadata: {name: r}\nspec: {size: 1}\n")
	env.WaitReconciled(t, randoms, ns, "r")
	mark := time.Now()
	time.Sleep(5 * time.Second)
	if n := writesTo(mark, "/configmaps/r"); n != 0 {
		t.Fatalf("%d writes to the ConfigMap at rest:\n%s", n, writesSince(mark))
	}

	// A reconcile without a spec change (a label): reported, not applied.
	env.Patch(t, randoms, ns, "r", `{"metadata":{"labels":{"touched":"1"}}}`)
	env.WaitCondition(t, randoms, ns, "r", "Reconciled", "False", "NonDeterministic", "configmap.yaml: configmaps "+ns+"/r (it calls randAlphaNum)")
	time.Sleep(2 * time.Second)
	if n := writesTo(mark, "/configmaps/r"); n != 0 {
		t.Fatalf("%d writes to the ConfigMap after a label change:\n%s", n, writesSince(mark))
	}
	if s := mgr.Stats(randomGK); s == nil || s.NonDeterministic.Load() == 0 {
		t.Error("the NonDeterministic counter did not move")
	}

	// A spec change applies it, once.
	mark = time.Now()
	env.Patch(t, randoms, ns, "r", `{"spec":{"size":2}}`)
	env.WaitReconciled(t, randoms, ns, "r")
	time.Sleep(3 * time.Second)
	if n := writesTo(mark, "/configmaps/r"); n != 1 {
		t.Fatalf("%d writes to the ConfigMap after a spec change, want 1:\n%s", n, writesSince(mark))
	}
}

// TestRequeueFloor: requeueAfter "1ns" from a spec field spun a worker;
// it is now floored at --min-requeue (1 s by default). Tick's status
// changes on every render, so its status writes count its reconciles.
func TestRequeueFloor(t *testing.T) {
	ns := env.Namespace(t)
	ticks := safetyGVR("ticks")
	env.Create(t, ticks, ns, "apiVersion: safety.tmplop.io/v1\nkind: Tick\nmetadata: {name: t}\nspec: {every: 1ns}\n")
	env.WaitReconciled(t, ticks, ns, "t")
	mark := time.Now()
	time.Sleep(5 * time.Second)
	n := proxy.Count(func(r harness.Request) bool {
		return harness.IsWrite(r) && !r.Time.Before(mark) && r.Path == "/apis/safety.tmplop.io/v1/namespaces/"+ns+"/ticks/t/status"
	})
	t.Logf("%d reconciles in 5s with requeueAfter 1ns", n)
	if n < 2 || n > 8 {
		t.Fatalf("%d status writes in 5s, want about 5 (one a second)", n)
	}
}

// TestLookupKindServedLate: a folder whose lookup kind has no CRD yet. The
// object reports LookupFailed and is retried with backoff; installing the
// CRD is enough, with no edit of the object or the folder. Before, any
// lookup error but "cache not synced" was terminal, and a kind whose
// lookups could not be mapped at start stayed dead.
func TestLookupKindServedLate(t *testing.T) {
	ns := env.Namespace(t)
	waiters := safetyGVR("waiters")
	env.Create(t, waiters, ns, "apiVersion: safety.tmplop.io/v1\nkind: Waiter\nmetadata: {name: w}\n")
	env.WaitCondition(t, waiters, ns, "w", "Reconciled", "False", "LookupFailed", "is its CRD installed?")
	t.Cleanup(func() {
		_, _ = env.Kubectl(context.Background(), "delete", "-f", "testdata/gizmo-crd.yaml", "--wait=false")
	})
	if out, err := env.Kubectl(t.Context(), "apply", "--server-side", "-f", "testdata/gizmo-crd.yaml"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	start := time.Now()
	env.WaitReconciled(t, waiters, ns, "w")
	t.Logf("converged %s after the CRD was installed", time.Since(start).Round(time.Millisecond))
	cluster.Eventually(t, 10*time.Second, "the child", func(ctx context.Context) (bool, error) {
		_, err := env.Get(ctx, configMapGVR, ns, "w")
		return err == nil, nil
	})
}
