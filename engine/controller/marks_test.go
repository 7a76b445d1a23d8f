package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/shard"
	"github.com/tmplop/operator/engine/status"
)

var (
	errForbidden = apierrors.NewForbidden(configMapsGVR.GroupResource(), "x", errors.New("RBAC"))
	errTimeout   = apierrors.NewServerTimeout(configMapsGVR.GroupResource(), "patch", 1)
)

// refuse answers the requests a reactor matches with err.
func refuse(err error) clienttesting.ReactionFunc {
	return func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, err }
}

// refuseApply answers the server-side applies of children (not the
// parents' status) with err.
func refuseApply(err error) clienttesting.ReactionFunc {
	return func(a clienttesting.Action) (bool, runtime.Object, error) {
		p, ok := a.(clienttesting.PatchActionImpl)
		if !ok || p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		return true, nil, err
	}
}

// conditionOf is the status of the condition of type typ on obj, "" when
// it has none.
func conditionOf(obj *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return fmt.Sprint(m["status"])
		}
	}
	return ""
}

// TestFailuresMarkedWherever: a request refused as Forbidden is a terminal
// failure of the reconcile (Stalled, no retry with backoff, tried again
// after a minute) wherever the door sent it: on a child's apply, and on
// the inventory's read, record or creation alike, which before went
// around the door's marks and were retried as ApplyFailed. A failure that
// retrying may fix is retried with backoff in both places.
func TestFailuresMarkedWherever(t *testing.T) {
	cases := []struct {
		name     string
		child    clienttesting.ReactionFunc // on the children's ConfigMaps, through the dynamic client
		verb     string                     // of the inventory's ConfigMap, through the core group
		err      error
		terminal bool
	}{
		{name: "a child's apply forbidden", child: refuseApply(errForbidden), terminal: true},
		{name: "the inventory's read forbidden", verb: "get", err: errForbidden, terminal: true},
		{name: "the inventory's record forbidden", verb: "patch", err: errForbidden, terminal: true},
		{name: "the inventory's creation forbidden", verb: "create", err: errForbidden, terminal: true},
		{name: "a child's apply timed out", child: refuseApply(errTimeout)},
		{name: "the inventory's record timed out", verb: "patch", err: errTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			core := fake.NewClientset()
			if tc.verb != "" {
				core.PrependReactor(tc.verb, "configmaps", refuse(tc.err))
			}
			f := newFakeClusterWith(t, kube.Clients{Core: core.CoreV1()}, widget("a", "w1", 3))
			if tc.child != nil {
				f.dyn.PrependReactor("patch", "configmaps", tc.child)
			}
			m, ctx := newTestManager(t, f, Options{})
			if err := m.SyncFolders(ctx, fakeFolders{loadWidget(t)}); err != nil {
				t.Fatal(err)
			}
			stats := m.Stats(widgetGVK.GroupKind())
			eventually(t, "the failure handled", func() bool { return stats.Terminal.Load()+stats.RateLimited.Load() > 0 })
			w := f.get(widgetGVR, "a", "w1")
			stalled, reconciling := conditionOf(w, status.ConditionStalled), conditionOf(w, status.ConditionReconciling)
			t.Logf("terminal %d, rate-limited %d; Stalled %q, Reconciling %q", stats.Terminal.Load(), stats.RateLimited.Load(), stalled, reconciling)
			if tc.terminal {
				if stats.Terminal.Load() == 0 || stats.RateLimited.Load() != 0 || stalled != "True" {
					t.Errorf("retried with backoff (or not reported Stalled); want terminal, as a child's apply refused")
				}
				return
			}
			if stats.RateLimited.Load() == 0 || stats.Terminal.Load() != 0 || reconciling != "True" {
				t.Errorf("not retried with backoff (or not reported Reconciling); want a retry")
			}
		})
	}
}

// TestHandOverMarked: a hand-over refused as Forbidden (the kind's account
// may not patch its objects) is terminal as a child's apply refused is,
// tried again after a minute; a Conflict (the object changed since the
// cache saw it) is retried at once, with backoff.
func TestHandOverMarked(t *testing.T) {
	// w is labelled a, and belongs to b on the ring of a and b: a hands
	// it over.
	ring := shard.NewRing([]string{"a", "b"})
	name := ""
	for i := 0; name == ""; i++ {
		if n := fmt.Sprintf("w%d", i); ring.Owner(shard.Key(widgetGVK.Group, widgetGVK.Kind, "ns", n)) == "b" {
			name = n
		}
	}
	cases := []struct {
		name     string
		err      error
		terminal bool
	}{
		{name: "forbidden", err: errForbidden, terminal: true},
		{name: "conflict", err: apierrors.NewConflict(widgetGVR.GroupResource(), name, errors.New("changed"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
			md.PrependReactor("patch", "widgets", refuse(tc.err))
			f := newFakeClusterWith(t, kube.Clients{Core: fake.NewClientset().CoreV1(), Metadata: md}, labelled(widget("ns", name, 3), "a"))
			m, ctx := newTestManager(t, f, Options{Sharding: &Sharding{ID: "a", Members: ringOf(t, "a", "b"), Sharder: make(chan struct{})}})
			if err := m.SyncFolders(ctx, fakeFolders{loadWidget(t)}); err != nil {
				t.Fatal(err)
			}
			stats := m.Stats(widgetGVK.GroupKind())
			eventually(t, "the hand-over tried", func() bool { return stats.Terminal.Load()+stats.RateLimited.Load() > 0 })
			time.Sleep(100 * time.Millisecond) // room for retries with backoff (5 ms, 10 ms...)
			t.Logf("terminal %d, rate-limited %d, handed over %d", stats.Terminal.Load(), stats.RateLimited.Load(), stats.HandedOver.Load())
			if stats.HandedOver.Load() != 0 || stats.Reconciles.Load() != 0 {
				t.Fatalf("handed over %d, reconciled %d; the label write failed", stats.HandedOver.Load(), stats.Reconciles.Load())
			}
			// Terminal once for each time the key was queued: its add, and
			// the ring's first pass (followRing).
			if tc.terminal && (stats.Terminal.Load() == 0 || stats.RateLimited.Load() != 0) {
				t.Errorf("retried with backoff; want terminal, as a child's apply refused")
			}
			if !tc.terminal && (stats.Terminal.Load() != 0 || stats.RateLimited.Load() < 2) {
				t.Errorf("not retried with backoff")
			}
		})
	}
}
