package safety

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// TestTwoAPIVersions: two folders render the same resource at two API
// versions (autoscaling/v1 and /v2 HorizontalPodAutoscalers). Before,
// prune keys held the version, so each reconcile of one parent deleted
// the other's child, forever. Now children are keyed by group and
// resource, and watched once.
func TestTwoAPIVersions(t *testing.T) {
	ns := env.Namespace(t)
	one, two := safetyGVR("hpaones"), safetyGVR("hpatwos")
	hpas := cluster.GVR("autoscaling", "v2", "horizontalpodautoscalers")
	env.Create(t, one, ns, "apiVersion: safety.tmplop.io/v1\nkind: HpaOne\nmetadata: {name: a}\n")
	env.Create(t, two, ns, "apiVersion: safety.tmplop.io/v1\nkind: HpaTwo\nmetadata: {name: b}\n")
	env.WaitReconciled(t, one, ns, "a")
	env.WaitReconciled(t, two, ns, "b")
	uids := map[string]string{}
	for _, n := range []string{"a", "b"} {
		h, err := env.Get(t.Context(), hpas, ns, n)
		if err != nil {
			t.Fatal(err)
		}
		uids[n] = string(h.GetUID())
	}
	mark := time.Now()
	// Reconcile both a few times: every reconcile prunes.
	for i := range 3 {
		env.Patch(t, one, ns, "a", fmt.Sprintf(`{"metadata":{"labels":{"round":"%d"}}}`, i))
		env.Patch(t, two, ns, "b", fmt.Sprintf(`{"metadata":{"labels":{"round":"%d"}}}`, i))
		time.Sleep(time.Second)
	}
	time.Sleep(2 * time.Second)
	deletes := proxy.Count(func(r harness.Request) bool {
		return r.Method == "DELETE" && !r.Time.Before(mark) && strings.Contains(r.Path, "/horizontalpodautoscalers/")
	})
	// The cache holds the preferred version (v2), so HpaOne's v1 child may
	// be re-applied after the HPA controller changed its status: a write
	// that changes nothing. Deleting is what must never happen.
	t.Logf("%d deletes, %d applies of the v1 HPA, %d of the v2 HPA in 3 rounds of reconciles", deletes,
		writesTo(mark, "/horizontalpodautoscalers/a"), writesTo(mark, "/horizontalpodautoscalers/b"))
	if deletes != 0 || writesTo(mark, "/horizontalpodautoscalers/b") != 0 {
		t.Fatalf("HPAs deleted or the preferred-version child re-applied:\n%s", writesSince(mark))
	}
	for n, uid := range uids {
		h, err := env.Get(t.Context(), hpas, ns, n)
		if err != nil || string(h.GetUID()) != uid {
			t.Fatalf("HPA %s was deleted or replaced: %v", n, err)
		}
	}
}

// TestCreateDeleteRace: objects created and deleted back to back. Before,
// the parent's metadata was server-side applied without a UID
// precondition, and an apply that came after the delete created an empty
// parent again. Race objects have a cluster-scoped child, so the operator
// does write their metadata (the finalizer).
func TestCreateDeleteRace(t *testing.T) {
	ns := env.Namespace(t)
	races := safetyGVR("races")
	const n = 20
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		env.Create(t, races, ns, "apiVersion: safety.tmplop.io/v1\nkind: Race\nmetadata: {name: "+name+"}\n")
		env.Delete(t, races, ns, name)
	}
	// Give the reconciles the objects triggered time to run, then wait
	// for the finalizers of those that got one to clean up.
	time.Sleep(3 * time.Second)
	cluster.Eventually(t, 60*time.Second, "no Race and no race ClusterRole left", func(ctx context.Context) (bool, error) {
		list, err := env.Resource(races, ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			return false, fmt.Errorf("%d Race objects exist, the first %s (deleting: %v)", len(list.Items), list.Items[0].GetName(), list.Items[0].GetDeletionTimestamp() != nil)
		}
		for i := range n {
			if _, err := cs.RbacV1().ClusterRoles().Get(ctx, fmt.Sprintf("race-%s-r%d", ns, i), metav1.GetOptions{}); err == nil {
				return false, fmt.Errorf("ClusterRole race-%s-r%d is orphaned", ns, i)
			}
		}
		return true, nil
	})
}

// TestPruneOptOut: a child annotated operator.tmplop.io/prune: disabled
// stays when its template stops rendering it; the others go.
func TestPruneOptOut(t *testing.T) {
	ns := env.Namespace(t)
	keeps := safetyGVR("keeps")
	env.Create(t, keeps, ns, "apiVersion: safety.tmplop.io/v1\nkind: Keep\nmetadata: {name: k}\nspec: {render: true}\n")
	env.WaitReconciled(t, keeps, ns, "k")
	env.Patch(t, keeps, ns, "k", `{"spec":{"render":false}}`)
	cluster.Eventually(t, 30*time.Second, "k-pruned deleted", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "k-pruned", metav1.GetOptions{})
		return err != nil, nil
	})
	if !env.Exists(t, configMapGVR, ns, "k-kept") {
		t.Fatal("the child that opted out of pruning was deleted")
	}
}

// TestDeletionGuard: children rendered from a lookup vanish when its items
// do. Deleting most of them in one reconcile without a change of spec, or
// all that came from a lookup that now returns nothing, waits for a second
// render after the confirm delay, with a PruneHeld condition and an Event
// meanwhile; then it proceeds.
func TestDeletionGuard(t *testing.T) {
	ns := env.Namespace(t)
	fleets := safetyGVR("fleets")
	source := func(name, set string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet": set}}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"s1", "s2", "s3", "s4"} {
		source(s, "f")
	}
	source("o1", "other")
	env.Create(t, fleets, ns, "apiVersion: safety.tmplop.io/v1\nkind: Fleet\nmetadata: {name: f}\n")
	env.WaitReconciled(t, fleets, ns, "f")
	members := func(ctx context.Context) (int, error) {
		list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=" + fieldManager})
		return len(list.Items), err
	}
	cluster.Eventually(t, 30*time.Second, "4 members", func(ctx context.Context) (bool, error) {
		n, err := members(ctx)
		return n == 4, err
	})

	cases := []struct {
		name    string
		change  func(t *testing.T)
		reason  string
		message string
		during  int // members while the prune is held
		left    int
	}{
		{name: "most children in one reconcile without a spec change",
			// A label picks another set of sources: the render keeps one
			// new member and drops the four old ones.
			change: func(t *testing.T) { env.Patch(t, fleets, ns, "f", `{"metadata":{"labels":{"set":"other"}}}`) },
			reason: "MassDeletion", message: "4 of 5 children would be deleted without a change of spec", during: 5, left: 1},
		{name: "every child of an emptied lookup",
			change: func(t *testing.T) {
				if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), "o1", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			reason: "LookupEmpty", message: "a list lookup in members.yaml returned no items, and all 1 children it rendered would be deleted", during: 1, left: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.change(t)
			start := time.Now()
			env.WaitCondition(t, fleets, ns, "f", "PruneHeld", "True", tc.reason, tc.message)
			if n, err := members(t.Context()); err != nil || n != tc.during {
				t.Fatalf("%d members while the prune is held, want %d (%v)", n, tc.during, err)
			}
			if _, err := event(t.Context(), ns, "f", "PruneHeld"); err != nil {
				t.Error(err)
			}
			cluster.Eventually(t, 3*pruneDelay+10*time.Second, fmt.Sprintf("%d members after the confirmation", tc.left), func(ctx context.Context) (bool, error) {
				n, err := members(ctx)
				return n == tc.left, err
			})
			held := time.Since(start)
			t.Logf("held for %s (confirm delay %s)", held.Round(100*time.Millisecond), pruneDelay)
			if held < pruneDelay-time.Second {
				t.Fatalf("the prune went through after %s, before the confirm delay of %s", held, pruneDelay)
			}
			cluster.Eventually(t, 10*time.Second, "PruneHeld cleared", func(ctx context.Context) (bool, error) {
				o, err := env.Get(ctx, fleets, ns, "f")
				if err != nil {
					return false, err
				}
				return cluster.Condition(o, "PruneHeld").Status == "", nil
			})
		})
	}
}

// TestOrphanSweep: a parent with a child outside its namespace goes away
// while no operator serves its kind, and its finalizer is removed by hand
// (as after a crash, or by someone impatient). When the kind starts
// again, its sweep deletes the child whose parent is gone.
func TestOrphanSweep(t *testing.T) {
	ns := env.Namespace(t)
	races := safetyGVR("races")
	env.Create(t, races, ns, "apiVersion: safety.tmplop.io/v1\nkind: Race\nmetadata: {name: gone}\n")
	env.WaitReconciled(t, races, ns, "gone")
	role := "race-" + ns + "-gone"
	if !env.Exists(t, cluster.GVR("rbac.authorization.k8s.io", "v1", "clusterroles"), "", role) {
		t.Fatal("no ClusterRole")
	}
	k, err := catalog.LoadKind("testdata/templates/race")
	if err != nil {
		t.Fatal(err)
	}
	mgr.Stop(k.GVK.GroupKind())
	t.Cleanup(func() { _ = mgr.Start(k) })
	env.Delete(t, races, ns, "gone")
	env.Patch(t, races, ns, "gone", `{"metadata":{"finalizers":null}}`)
	cluster.Eventually(t, 10*time.Second, "the Race gone", func(ctx context.Context) (bool, error) {
		_, err := env.Get(ctx, races, ns, "gone")
		return err != nil, nil
	})
	if !env.Exists(t, cluster.GVR("rbac.authorization.k8s.io", "v1", "clusterroles"), "", role) {
		t.Fatal("the ClusterRole went without the operator")
	}
	if err := mgr.Start(k); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 30*time.Second, "the orphaned ClusterRole swept", func(ctx context.Context) (bool, error) {
		_, err := cs.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
		return err != nil, nil
	})
}
