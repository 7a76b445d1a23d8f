package safety

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/revision"
	"github.com/tmplop/operator/engine/rollout"
	"github.com/tmplop/operator/internal/testsupport/rollouttest"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// TestRollout: a folder change over 100 objects rolls out in steps (one
// canary, 10%, 50%, all), each step only once every object of the step
// before is reconciled with the new revision and Ready; a broken revision
// (a Deployment that never becomes available: its Pod fits no Node,
// whether or not the plane runs a controller-manager and kwok) halts after its first step with the other objects
// untouched; `operator rollout undo` brings the step back; a SIGKILL in
// the middle of a rollout, and a restart, resume it where it was, every
// object always on a kept revision. The real binary, behind the counting
// proxy.
func TestRollout(t *testing.T) {
	const (
		manager = "safety-rollout"
		objects = 100
		canary  = "r07" // labelled tier=canary: the first step
	)
	res := safetyGVR("rolleds")
	gr := res.GroupResource()
	kindSel := revision.LabelKind + "=" + revision.LabelValue(gr)
	if err := cs.AppsV1().ControllerRevisions("default").DeleteCollection(t.Context(), metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: kindSel}); err != nil {
		t.Fatal(err)
	}
	spec := &rollout.Spec{Steps: []rollout.Step{{Count: 1}, {Percent: 10}, {Percent: 50}}, Canary: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}

	templates := t.TempDir()
	folder := filepath.Join(templates, "rolled")
	// write puts version of the folder in place: a ConfigMap per object
	// that says the version, Ready unless the test holds it (annotation
	// test.tmplop.io/hold on the child); broken adds a Deployment that
	// never becomes available and a short step deadline.
	write := func(version int, broken bool) {
		t.Helper()
		deadline := "60s"
		if broken {
			deadline = "8s"
		}
		kind := fmt.Sprintf(`apiVersion: safety.tmplop.io/v1
kind: Rolled
plural: rolleds
spec:
  value: string
rollout:
  steps: [1, 10%%, 50%%]
  canary: {matchLabels: {tier: canary}}
  stepDeadline: %s
readyWhen:
  - apiVersion: v1
    kind: ConfigMap
    expression: '{{ ne (dig "metadata" "annotations" "test.tmplop.io/hold" "" .) "true" }}'
`, deadline)
		files := map[string]string{
			"kind.yaml":      kind,
			"configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name | quote }}\ndata:\n  value: {{ .Spec.value | quote }}\n  folder: \"v%d\"\n", version),
		}
		if broken {
			files["deployment.yaml"] = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name | quote }}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Name | quote }}}}
  template:
    metadata: {labels: {app: {{ .Name | quote }}}}
    spec:
      nodeSelector: {test.tmplop.io/nowhere: "true"}
      containers: [{name: app, image: "example.invalid/app:broken"}]
`
		}
		harness.WriteFolder(t, folder, files)
	}
	p, kubeconfig := procProxy(t)
	run := func() *harness.Operator {
		t.Helper()
		op := procStart(t, manager, templates, kubeconfig, "--install-crds")
		procWaitServing(t, op, 1)
		return op
	}
	ns := env.Namespace(t)
	hold := func(name string, on bool) {
		v := `"true"`
		if !on {
			v = "null"
		}
		env.Patch(t, configMapGVR, ns, name, fmt.Sprintf(`{"metadata":{"annotations":{"test.tmplop.io/hold":%s}}}`, v))
	}
	// state is the kind's rollout as the records say.
	state := func(ctx context.Context) (*rollout.State, error) {
		return rollouttest.State(ctx, cs, "default", kindSel)
	}
	type view struct {
		revision int64
		ready    bool
		folder   string
		cmRV     string
		pos      string
	}
	// look reads every object: its revision, Ready, and its ConfigMap's.
	look := func(ctx context.Context) (map[string]view, error) {
		l, err := env.Resource(res, ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		cms, err := env.Resource(configMapGVR, ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		byName := map[string]unstructured.Unstructured{}
		for _, cm := range cms.Items {
			byName[cm.GetName()] = cm
		}
		out := map[string]view{}
		for _, o := range l.Items {
			rev, _, _ := unstructured.NestedInt64(o.Object, "status", "observedRevision")
			gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
			cm := byName[o.GetName()]
			f, _, _ := unstructured.NestedString(cm.Object, "data", "folder")
			out[o.GetName()] = view{revision: rev, ready: gen == o.GetGeneration() && cluster.Condition(&o, "Ready").Status == "True",
				folder: f, cmRV: cm.GetResourceVersion(), pos: rollout.Position(ns, o.GetName(), o.GetLabels()["tier"] == "canary")}
		}
		return out, nil
	}
	allAt := func(number int64, version int, timeout time.Duration) {
		t.Helper()
		cluster.Eventually(t, timeout, fmt.Sprintf("every object Ready at revision %d (folder v%d)", number, version), func(ctx context.Context) (bool, error) {
			vs, err := look(ctx)
			if err != nil {
				return false, err
			}
			if len(vs) != objects {
				return false, fmt.Errorf("%d objects", len(vs))
			}
			for name, v := range vs {
				if v.revision != number || !v.ready || v.folder != fmt.Sprintf("v%d", version) {
					return false, fmt.Errorf("%s: revision %d ready %v folder %s", name, v.revision, v.ready, v.folder)
				}
			}
			return true, nil
		})
	}
	waitState := func(what string, timeout time.Duration, ok func(*rollout.State) bool) *rollout.State {
		t.Helper()
		var got *rollout.State
		cluster.Eventually(t, timeout, what, func(ctx context.Context) (bool, error) {
			st, err := state(ctx)
			if err != nil {
				return false, err
			}
			got = st
			if !ok(st) {
				return false, fmt.Errorf("rollout %d %s step %s from %d to %d: %s", st.Seq, st.Phase, st.StepName(), st.From.Number, st.To.Number, st.Message)
			}
			return true, nil
		})
		return got
	}
	cli := func(args ...string) string {
		t.Helper()
		bin, err := harness.BuildOperator(env.RepoRoot())
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), bin, append(append([]string{"rollout"}, args...), revision.LabelValue(gr),
			"--kubeconfig", env.Kubeconfig, "--state-namespace", "default", "--field-manager", manager)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("operator rollout %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	// Revision 1, served to 100 objects: nothing to stage.
	write(1, false)
	op := run()
	for i := range objects {
		o := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": res.GroupVersion().String(), "kind": "Rolled",
			"metadata": map[string]any{"name": fmt.Sprintf("r%02d", i)},
			"spec":     map[string]any{"value": "x"},
		}}
		if o.GetName() == canary {
			o.SetLabels(map[string]string{"tier": "canary"})
		}
		env.CreateObject(t, res, ns, o)
	}
	allAt(1, 1, 90*time.Second)
	waitState("revision 1 complete", 30*time.Second, func(st *rollout.State) bool { return st.To.Number == 1 && st.Phase == rollout.Complete })
	procStop(t, op, 30*time.Second)

	// Revision 2 in steps. The canary is held not Ready: the second step
	// must not start.
	hold(canary, true)
	write(2, false)
	op = run()
	first := waitState("rollout to revision 2 at step 1", 60*time.Second, func(st *rollout.State) bool {
		return st.To.Number == 2 && st.Step == 0 && st.Phase == rollout.Progressing
	})
	cluster.Eventually(t, 30*time.Second, "the canary reconciled with revision 2", func(ctx context.Context) (bool, error) {
		vs, err := look(ctx)
		if err != nil {
			return false, err
		}
		if v := vs[canary]; v.revision != 2 || v.folder != "v2" {
			return false, fmt.Errorf("canary at revision %d, folder %s", v.revision, v.folder)
		}
		return true, nil
	})
	time.Sleep(6 * time.Second) // three looks of the driver
	if st, err := state(t.Context()); err != nil || st.Step != 0 || st.Seq != first.Seq {
		t.Fatalf("with the canary not Ready the rollout moved on: %+v (%v)", st, err)
	}
	vs, err := look(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range vs {
		if name != canary && (v.revision != 1 || v.folder != "v1") {
			t.Errorf("%s moved to revision %d (folder %s) while the first step waits", name, v.revision, v.folder)
		}
	}

	// operator plan covers what the next step changes: the 9 objects of
	// step 2 besides the canary, whose ConfigMaps go from v1 to v2; the
	// 90 others stay on revision 1 and are not planned.
	bin, err := harness.BuildOperator(env.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	planCmd := exec.CommandContext(t.Context(), bin, "plan", "--kubeconfig", env.Kubeconfig, "--templates", templates,
		"-n", ns, "--state-namespace", "default", "--field-manager", manager, "-o", "json")
	planOut, _ := planCmd.Output()
	var planned struct {
		Objects []struct {
			Name string `json:"name"`
		} `json:"objects"`
		Rollouts []string `json:"rollouts"`
	}
	if err := json.Unmarshal(planOut, &planned); err != nil {
		t.Fatalf("operator plan -o json: %v\n%s", err, planOut)
	}
	if len(planned.Objects) != 9 || len(planned.Rollouts) != 1 || !strings.Contains(planned.Rollouts[0], "planned through step 2/4: 10 objects") {
		t.Errorf("operator plan at step 1: %d objects changed, rollouts %q; want 9, and the next step's 10 objects", len(planned.Objects), planned.Rollouts)
	}

	// Released: the steps follow, each only after the one before. A poll
	// checks that no object is ever ahead of its step and that when a step
	// starts every object of the steps before is at revision 2 and Ready.
	hold(canary, false)
	steps := map[int]time.Time{}
	prevCutoff := ""
	lastStep := -1
	cluster.Eventually(t, 120*time.Second, "rollout to revision 2 complete, step by step", func(ctx context.Context) (bool, error) {
		st, err := state(ctx)
		if err != nil {
			return false, err
		}
		vs, err := look(ctx)
		if err != nil {
			return false, err
		}
		if st.To.Number != 2 {
			t.Fatalf("rollout to %d, want 2", st.To.Number)
		}
		for name, v := range vs {
			if st.Phase != rollout.Complete && v.revision == 2 && v.pos > st.Cutoff {
				t.Fatalf("%s is at revision 2 ahead of its step: position %s after the cutoff %s of step %s", name, v.pos, st.Cutoff, st.StepName())
			}
		}
		if st.Step != lastStep {
			steps[st.Step] = time.Now()
			for name, v := range vs {
				if v.pos <= prevCutoff && (v.revision != 2 || !v.ready) {
					t.Fatalf("step %s started while %s of the step before was at revision %d, Ready %v", st.StepName(), name, v.revision, v.ready)
				}
			}
			lastStep, prevCutoff = st.Step, st.Cutoff
		}
		if st.Phase != rollout.Complete {
			return false, fmt.Errorf("%s step %s", st.Phase, st.StepName())
		}
		return true, nil
	})
	allAt(2, 2, 60*time.Second)
	t.Logf("steps seen by the poll at: %v", steps)
	// One step after the other, none skipped: the driver records an Event
	// as each step starts. The poll above samples the state and can miss a
	// step whose objects are Ready within milliseconds.
	done, err := state(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 30*time.Second, "an Event for each step of the rollout to revision 2", func(ctx context.Context) (bool, error) {
		ev, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=RolloutStepStarted"})
		if err != nil {
			return false, err
		}
		for k := 1; k <= 4; k++ {
			want := fmt.Sprintf("Rollout %d (revision %d to 2), step %d/4: ", done.Seq, done.From.Number, k)
			if !slices.ContainsFunc(ev.Items, func(e corev1.Event) bool { return strings.HasPrefix(e.Message, want) }) {
				return false, fmt.Errorf("no Event %q among %d", want, len(ev.Items))
			}
		}
		return true, nil
	})

	// Revision 3 is broken: its canary's Deployment never becomes
	// available. The rollout halts at step 1 past the deadline, and no
	// other object or child is touched.
	before, err := look(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	procStop(t, op, 30*time.Second)
	write(3, true)
	op = run()
	halted := waitState("rollout to revision 3 halted at step 1", 60*time.Second, func(st *rollout.State) bool {
		return st.To.Number == 3 && st.Phase == rollout.Halted
	})
	if halted.Step != 0 || halted.Reason != "StepDeadlineExceeded" || !strings.Contains(halted.Message, canary) {
		t.Errorf("halted at step %s, %s: %s; want step 1/4, StepDeadlineExceeded naming %s", halted.StepName(), halted.Reason, halted.Message, canary)
	}
	time.Sleep(3 * time.Second)
	after, err := look(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range after {
		if name == canary {
			if v.revision != 3 {
				t.Errorf("canary at revision %d, want 3", v.revision)
			}
			continue
		}
		if v.revision != 2 || v.cmRV != before[name].cmRV {
			t.Errorf("%s touched by the halted rollout: revision %d, ConfigMap resourceVersion %s -> %s", name, v.revision, before[name].cmRV, v.cmRV)
		}
	}
	if n := p.Count(func(r harness.Request) bool {
		return harness.IsWrite(r) && strings.Contains(r.Path, "/deployments")
	}); n != 1 {
		t.Errorf("%d Deployment writes, want 1: the canary's alone", n)
	}
	ev, err := cs.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{FieldSelector: "reason=RolloutHalted"})
	if err != nil || len(ev.Items) == 0 {
		t.Errorf("no RolloutHalted Event (%v)", err)
	}

	// Undo: back to revision 2, the canary first.
	out := cli("undo")
	t.Logf("operator rollout undo: %s", out)
	waitState("undo to revision 2 complete", 60*time.Second, func(st *rollout.State) bool {
		return st.Undo && st.To.Number == 2 && st.Phase == rollout.Complete
	})
	allAt(2, 2, 60*time.Second)
	if _, err := cs.AppsV1().Deployments(ns).Get(t.Context(), canary, metav1.GetOptions{}); err == nil {
		t.Errorf("the canary's Deployment of revision 3 was not pruned by the undo")
	}
	if out := cli("status"); !strings.Contains(out, "Complete") {
		t.Errorf("operator rollout status after the undo does not say Complete:\n%s", out)
	}
	// kubectl waits for it as docs/rollout.md says.
	undone, err := state(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := env.Kubectl(t.Context(), "wait", "-n", "default", "controllerrevision/"+undone.To.Record,
		`--for=jsonpath={.metadata.labels.operator\.tmplop\.io/rollout-phase}=Complete`, "--timeout=20s"); err != nil {
		t.Errorf("kubectl wait for the rollout: %v\n%s", err, out)
	}

	// Revision 4, held at its first step, SIGKILLed, restarted: the same
	// rollout goes on, and every object is on revision 2 or 4 throughout.
	procStop(t, op, 30*time.Second)
	hold(canary, true)
	write(4, false)
	op = run()
	r4 := waitState("rollout to revision 4 at step 1", 60*time.Second, func(st *rollout.State) bool {
		return st.To.Number == 4 && st.From.Number == 2 && st.Step == 0
	})
	cluster.Eventually(t, 30*time.Second, "the canary at revision 4", func(ctx context.Context) (bool, error) {
		vs, err := look(ctx)
		return err == nil && vs[canary].revision == 4, err
	})
	if err := op.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, _, err := op.Wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	op = run()
	time.Sleep(4 * time.Second)
	if vs, err := look(t.Context()); err != nil {
		t.Fatal(err)
	} else {
		for name, v := range vs {
			if v.revision != 2 && v.revision != 4 {
				t.Errorf("after a SIGKILL and a restart %s is on revision %d, want 2 or 4", name, v.revision)
			}
		}
	}
	if st, err := state(t.Context()); err != nil || st.Seq != r4.Seq || st.Step != 0 {
		t.Fatalf("after a restart the rollout is %+v (%v), want rollout %d still at step 1", st, err, r4.Seq)
	}
	hold(canary, false)
	waitState("rollout to revision 4 complete after the restart", 120*time.Second, func(st *rollout.State) bool {
		return st.Seq == r4.Seq && st.Phase == rollout.Complete
	})
	allAt(4, 4, 60*time.Second)
	recs, err := cs.AppsV1().ControllerRevisions("default").List(t.Context(), metav1.ListOptions{LabelSelector: kindSel})
	if err != nil {
		t.Fatal(err)
	}
	kept := map[int64]bool{}
	for _, r := range recs.Items {
		kept[r.Revision] = true
	}
	for _, n := range []int64{2, 4} {
		if !kept[n] {
			t.Errorf("revision %d's record is gone: %v", n, kept)
		}
	}
	procStop(t, op, 30*time.Second)
}
