package safety

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// TestAPIServerOutage: the API server goes away for 30 s while objects are
// created, changed and deleted behind the operator's back, then answers
// every PATCH with 500 for 10 s. The operator must neither exit nor lose
// anything: once the API server is back, every object converges on its
// current spec, and no child outlives its parent.
func TestAPIServerOutage(t *testing.T) {
	const (
		manager  = "safety-outage"
		outage   = 30 * time.Second
		failing  = 10 * time.Second
		converge = 90 * time.Second
	)
	p, kubeconfig := procProxy(t)
	// Only the operator goes through the proxy; the test's own client
	// (env, cs) talks to the API server directly, so it keeps working
	// during the outage, as other users of the cluster would.
	op := procStart(t, manager, procTemplates(t, "outage"), kubeconfig)
	ns := env.Namespace(t)

	// want is each object's current spec.value; deleted objects leave it.
	want := map[string]string{}
	for i := range 6 {
		name := fmt.Sprintf("f%d", i)
		want[name] = "v1"
		env.CreateSpec(t, procFault.res, procFault.kind, ns, name, map[string]any{"value": "v1"})
	}
	procWaitAll(t, ns, want, 60*time.Second, "before the outage")
	procAlive(t, op, "before the outage")

	p.Down()
	down := time.Now()
	changes := []struct {
		what  string
		names []string
		do    func(t *testing.T, name string)
	}{
		{"create", []string{"f6", "f7", "f8", "f9"}, func(t *testing.T, name string) {
			env.CreateSpec(t, procFault.res, procFault.kind, ns, name, map[string]any{"value": "new"})
			want[name] = "new"
		}},
		{"change", []string{"f0", "f1", "f2"}, func(t *testing.T, name string) {
			env.Patch(t, procFault.res, ns, name, `{"spec":{"value":"v2"}}`)
			want[name] = "v2"
		}},
		{"delete", []string{"f3", "f4"}, func(t *testing.T, name string) {
			if err := env.Resource(procFault.res, ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete %s: %v", name, err)
			}
			delete(want, name)
		}},
	}
	for _, c := range changes {
		for _, name := range c.names {
			c.do(t, name)
		}
		t.Logf("during the outage: %s %s", c.what, strings.Join(c.names, ", "))
	}
	// The operator sees its watches cut and every request fail; it must
	// wait, not exit.
	for time.Since(down) < outage {
		procAlive(t, op, fmt.Sprintf("%s into the outage", time.Since(down).Round(time.Second)))
		time.Sleep(time.Second)
	}
	// The outage is real: the operator tried and could not act on what
	// changed behind its back.
	tried := p.Count(func(r harness.Request) bool { return !r.Time.Before(down) })
	if env.Exists(t, configMapGVR, ns, "f6") {
		t.Errorf("ConfigMap f6 exists before the API server came back: the operator was not cut off")
	}
	p.Up()
	up := time.Now()
	t.Logf("requests the operator tried during the %s outage: %d", outage, tried)

	procWaitAll(t, ns, want, converge, "after the outage")
	t.Logf("all %d objects converged %s after the API server came back", len(want), time.Since(up).Round(time.Millisecond))

	// The deleted objects' children go by garbage collection (owner
	// references), which the operator's outage does not concern; anything
	// left after that is an orphan.
	var orphans []string
	cluster.Eventually(t, 60*time.Second, "no orphaned ConfigMaps", func(ctx context.Context) (bool, error) {
		orphans = procOrphans(ctx, t, ns, manager)
		if len(orphans) > 0 {
			return false, fmt.Errorf("orphaned: %s", strings.Join(orphans, ", "))
		}
		return true, nil
	})
	// Counted again once the garbage collector is done: converged objects
	// must stay converged.
	lost := procLost(t.Context(), ns, want)
	t.Logf("after the outage: lost %d of %d objects, orphaned %d ConfigMaps", len(lost), len(want), len(orphans))
	if len(lost) > 0 {
		t.Errorf("lost after the outage:\n%s", strings.Join(lost, "\n"))
	}
	procAlive(t, op, "after the outage converged")

	// Phase 2: the API server is up but refuses every write the operator
	// makes (apply and status are PATCHes) while two specs change.
	mark := time.Now()
	p.FailRequests(func(r *http.Request) bool { return r.Method == http.MethodPatch }, http.StatusInternalServerError)
	for _, name := range []string{"f0", "f5"} {
		env.Patch(t, procFault.res, ns, name, `{"spec":{"value":"v3"}}`)
		want[name] = "v3"
	}
	for time.Since(mark) < failing {
		procAlive(t, op, fmt.Sprintf("%s into the failing PATCHes", time.Since(mark).Round(time.Second)))
		time.Sleep(time.Second)
	}
	p.FailRequests(nil, 0)
	healed := time.Now()
	failed := p.Count(func(r harness.Request) bool {
		return r.Method == http.MethodPatch && r.Code == http.StatusInternalServerError && !r.Time.Before(mark)
	})
	t.Logf("PATCHes answered 500 during %s: %d", failing, failed)
	if failed == 0 {
		t.Errorf("no PATCH was refused while failing: the operator did not try to converge f0 and f5 then")
	}
	procWaitAll(t, ns, map[string]string{"f0": want["f0"], "f5": want["f5"]}, 60*time.Second, "after the failing PATCHes")
	t.Logf("f0 and f5 converged %s after PATCHes succeeded again", time.Since(healed).Round(time.Millisecond))
	procAlive(t, op, "at the end")
}

// procProxy is a proxy of the test's own in front of the API server, and
// a kubeconfig through it: the operator's only way to the cluster.
func procProxy(t *testing.T) (*harness.Proxy, string) {
	t.Helper()
	p, err := harness.NewProxy(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := p.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	return p, kubeconfig
}

// procWaitAll waits until every Fault in want converges on its value, and
// names the ones that did not (lost) when the time is up.
func procWaitAll(t *testing.T, ns string, want map[string]string, timeout time.Duration, when string) {
	t.Helper()
	cluster.Eventually(t, timeout, fmt.Sprintf("%d Faults converge %s", len(want), when), func(ctx context.Context) (bool, error) {
		if lost := procLost(ctx, ns, want); len(lost) > 0 {
			return false, fmt.Errorf("lost %d:\n%s", len(lost), strings.Join(lost, "\n"))
		}
		return true, nil
	})
}

// procLost describes the Faults in want that have not converged on their
// value.
func procLost(ctx context.Context, ns string, want map[string]string) []string {
	var lost []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if err := procConverged(ctx, procFault.res, ns, name, "value", want[name]); err != nil {
			lost = append(lost, err.Error())
		}
	}
	return lost
}

// procOrphans lists the ConfigMaps of manager in ns whose parent-uid label
// names no existing Fault.
func procOrphans(ctx context.Context, t *testing.T, ns, manager string) []string {
	t.Helper()
	faults, err := env.Resource(procFault.res, ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]bool{}
	for _, f := range faults.Items {
		uids[string(f.GetUID())] = true
	}
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: ownership.ManagedSelector(manager)})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cm := range cms.Items {
		if uid := cm.Labels[ownership.LabelParentUID]; !uids[uid] {
			out = append(out, fmt.Sprintf("%s (parent uid %q)", cm.Name, uid))
		}
	}
	return out
}
