package sharding

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/revision"
	"github.com/tmplop/operator/engine/rollout"
	"github.com/tmplop/operator/internal/testsupport/rollouttest"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// TestShardedRollout: with --sharding, a kind's rollout in steps holds
// across the three replicas. Each replica serves only its shard's
// objects, the sharder drives the rollout from a list of all of them, and
// every replica gives each object the revision the one state in the
// cluster gives it: while the canary (on whichever shard) is held not
// Ready, no object of any shard moves; released, the steps follow, and
// no object is ever at the new revision ahead of its step.
func TestShardedRollout(t *testing.T) {
	const (
		objects = 40
		canary  = "o07"
	)
	rollies := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "rollies"}
	templates := t.TempDir()
	write := func(version int) {
		t.Helper()
		harness.WriteFolder(t, filepath.Join(templates, "rolly"), map[string]string{
			"kind.yaml": `apiVersion: sharding.tmplop.io/v1
kind: Rolly
plural: rollies
spec:
  value: string
rollout:
  steps: [1, 25%, 50%]
  canary: {matchLabels: {tier: canary}}
  stepDeadline: 2m
readyWhen:
  - apiVersion: v1
    kind: ConfigMap
    expression: '{{ ne (dig "metadata" "annotations" "test.tmplop.io/hold" "" .) "true" }}'
`,
			"configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name | quote }}\ndata:\n  folder: \"v%d\"\n", version),
		})
	}
	g := newRing(t, "sharding-rollout")
	g.templates, g.extra = templates, []string{"--install-crds"}
	kindSel := revision.LabelKind + "=" + revision.LabelValue(rollies.GroupResource())
	startAll := func() {
		t.Helper()
		for _, id := range []string{"a", "b", "c"} {
			g.start(t, t, id)
		}
	}
	stopAll := func() {
		t.Helper()
		for _, r := range g.live() {
			if err := r.op.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if _, _, err := r.op.Wait(30 * time.Second); err != nil {
				t.Fatal(err)
			}
			r.killed = true
		}
	}
	state := func(ctx context.Context) (*rollout.State, error) {
		return rollouttest.State(ctx, cs, g.stateNS, kindSel)
	}
	type view struct {
		revision int64
		ready    bool
		shard    string
		pos      string
	}
	look := func(ctx context.Context) (map[string]view, error) {
		l, err := dyn.Resource(rollies).Namespace(g.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]view{}
		for _, o := range l.Items {
			rev, _, _ := unstructured.NestedInt64(o.Object, "status", "observedRevision")
			gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
			out[o.GetName()] = view{revision: rev, ready: gen == o.GetGeneration() && cluster.Condition(&o, "Ready").Status == "True",
				shard: o.GetLabels()[shardLabel], pos: rollout.Position(g.ns, o.GetName(), o.GetLabels()["tier"] == "canary")}
		}
		return out, nil
	}
	allAt := func(number int64) {
		t.Helper()
		poll(t, 90*time.Second, 200*time.Millisecond, fmt.Sprintf("every object Ready at revision %d", number), func(ctx context.Context) (bool, error) {
			vs, err := look(ctx)
			if err != nil {
				return false, err
			}
			if len(vs) != objects {
				return false, fmt.Errorf("%d objects", len(vs))
			}
			for name, v := range vs {
				if v.revision != number || !v.ready {
					return false, fmt.Errorf("%s: revision %d, Ready %v", name, v.revision, v.ready)
				}
			}
			return true, nil
		})
	}
	hold := func(on bool) {
		t.Helper()
		v := `"true"`
		if !on {
			v = "null"
		}
		if _, err := cs.CoreV1().ConfigMaps(g.ns).Patch(t.Context(), canary, "application/merge-patch+json",
			fmt.Appendf(nil, `{"metadata":{"annotations":{"test.tmplop.io/hold":%s}}}`, v), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	write(1)
	startAll()
	for i := range objects {
		o := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Rolly",
			"metadata": map[string]any{"name": fmt.Sprintf("o%02d", i)},
			"spec":     map[string]any{"value": "x"},
		}}
		if o.GetName() == canary {
			o.SetLabels(map[string]string{"tier": "canary"})
		}
		if _, err := dyn.Resource(rollies).Namespace(g.ns).Create(t.Context(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	allAt(1)
	vs, err := look(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	shards := map[string]int{}
	for _, v := range vs {
		shards[v.shard]++
	}
	if len(shards) < 2 {
		t.Fatalf("the objects are on %d shards (%v): the test needs them spread", len(shards), shards)
	}
	t.Logf("objects per shard: %v; the canary on %s", shards, vs[canary].shard)

	stopAll()
	hold(true)
	write(2)
	startAll()
	poll(t, 60*time.Second, 200*time.Millisecond, "the canary at revision 2", func(ctx context.Context) (bool, error) {
		vs, err := look(ctx)
		if err != nil {
			return false, err
		}
		return vs[canary].revision == 2, fmt.Errorf("canary at %d", vs[canary].revision)
	})
	time.Sleep(6 * time.Second) // three looks of the sharder
	st, err := state(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.To.Number != 2 || st.Step != 0 || st.Phase != rollout.Progressing {
		t.Fatalf("with the canary not Ready the rollout is %s at step %s to %d, want Progressing at step 1 to 2", st.Phase, st.StepName(), st.To.Number)
	}
	if vs, err = look(t.Context()); err != nil {
		t.Fatal(err)
	}
	for name, v := range vs {
		if name != canary && v.revision != 1 {
			t.Errorf("%s (shard %s) moved to revision %d while the canary is held", name, v.shard, v.revision)
		}
	}

	hold(false)
	lastStep, prevCutoff := st.Step, st.Cutoff
	poll(t, 120*time.Second, 100*time.Millisecond, "the rollout to revision 2 complete, step by step", func(ctx context.Context) (bool, error) {
		st, err := state(ctx)
		if err != nil {
			return false, err
		}
		vs, err := look(ctx)
		if err != nil {
			return false, err
		}
		for name, v := range vs {
			if st.Phase != rollout.Complete && v.revision == 2 && v.pos > st.Cutoff {
				t.Fatalf("%s (shard %s) at revision 2 ahead of step %s", name, v.shard, st.StepName())
			}
		}
		if st.Step != lastStep {
			for name, v := range vs {
				if v.pos <= prevCutoff && (v.revision != 2 || !v.ready) {
					t.Fatalf("step %s started while %s (shard %s) of the step before was at revision %d, Ready %v", st.StepName(), name, v.shard, v.revision, v.ready)
				}
			}
			lastStep, prevCutoff = st.Step, st.Cutoff
		}
		if st.Phase != rollout.Complete {
			return false, fmt.Errorf("%s at step %s", st.Phase, st.StepName())
		}
		return true, nil
	})
	allAt(2)
	stopAll()
}
