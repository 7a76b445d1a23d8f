package safety

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// The tests in process_test.go, restart_test.go and outage_test.go run the
// real operator binary as a child process, each with a field manager and
// kinds of its own, so that they never touch what the in-process operator
// (field manager "safety") or another of them manages.

// TestRenderBombs: a tenant who controls a template (through tpl) or a folder
// whose loop never ends must cost the operator one failed render each, bounded
// in time and memory, and nothing else: a well-behaved object of another
// tenant (another namespace) converges meanwhile, no bomb's child is written,
// the operator's CPU falls back to idle within the grace period once the last
// bomb is reported, and SIGTERM while a runaway render is in flight still
// ends the process cleanly.
func TestRenderBombs(t *testing.T) {
	const (
		renderTimeout = 2 * time.Second
		grace         = time.Second // render.Budget.grace() of a 2 s timeout
		drainTimeout  = 10 * time.Second
		maxRSS        = 512 << 20
		goodWithin    = 5 * time.Second
		// idleCPU is what the operator may spend in idleWindow once every
		// bomb is reported: its informers' resyncs and the Go runtime, no
		// render still running.
		idleWindow = 3 * time.Second
		idleCPU    = 300 * time.Millisecond
	)
	op := procStart(t, "safety-process", procTemplates(t, "process"), env.Kubeconfig,
		"--render-timeout", renderTimeout.String(), "--drain-timeout", drainTimeout.String())
	// Create nothing before every kind is served: the Good object's time
	// must measure reconciles, not the operator's start.
	procWaitServing(t, op, 3)
	ns, other := env.Namespace(t), env.Namespace(t)

	bombs := []struct {
		name string
		kind procKind
		spec map[string]any
		// budgets are the budget names the message may name, one of them
		// is enough (a recursion that doubles hits depth or calls first,
		// depending on the engine's order of checks).
		budgets []string
	}{
		{name: "loop", kind: procBomb,
			spec:    map[string]any{"template": `{{ range until 200000000 }}x{{ end }}`},
			budgets: []string{"output"}},
		{name: "tpl", kind: procBomb,
			spec:    map[string]any{"template": `{{ tpl "{{ tpl \"{{ range until 100000000 }}xx{{ end }}\" . }}" . }}`},
			budgets: []string{"output"}},
		{name: "recursion", kind: procBomb,
			spec:    map[string]any{"template": `{{ define "r" }}{{ template "r" . }}{{ template "r" . }}{{ end }}{{ template "r" . }}`},
			budgets: []string{"calls", "depth"}},
		// 7 KB of format that fmt would expand to 600 MB before anything
		// is charged, if widths were checked one at a time.
		{name: "printf", kind: procBomb,
			spec:    map[string]any{"template": `{{ printf "` + strings.Repeat("%1000000[1]d", 600) + `" 1 }}`},
			budgets: []string{"output"}},
		// sprig's uniq compares every pair with reflect.DeepEqual: hours in
		// one call, where no deadline check is reached.
		{name: "uniq", kind: procBomb,
			spec:    map[string]any{"template": `{{ chunk 1 (until 50000) | uniq | len }}`},
			budgets: []string{"output", "time", "work"}},
		// A map of 4 million entries from a 4 MB string.
		{name: "split", kind: procBomb,
			spec:    map[string]any{"template": `{{ split "" (repeat 4000000 "x") | len }}`},
			budgets: []string{"output"}},
		// append copies the list on every call: quadratic growth, kept alive.
		{name: "append", kind: procBomb,
			spec:    map[string]any{"template": `{{ $all := list }}{{ $l := list }}{{ range until 100000 }}{{ $l = append $l . }}{{ $all = append $all $l }}{{ end }}`},
			budgets: []string{"output"}},
		{name: "set", kind: procBomb,
			spec:    map[string]any{"template": `{{ $d := dict }}{{ range $i := until 3000 }}{{ range $j := until 3000 }}{{ $_ := set $d (printf "%d-%d" $i $j) 1 }}{{ end }}{{ end }}`},
			budgets: []string{"output", "time"}},
		// A thousand CAs (2048-bit RSA keys): each call bounded, the loop short,
		// so only the clock can stop it.
		{name: "spin", kind: procSpin,
			spec:    map[string]any{"n": int64(1000)},
			budgets: []string{"time"}},
	}
	for _, b := range bombs {
		env.CreateSpec(t, b.kind.res, b.kind.kind, ns, b.name, b.spec)
	}
	procAlive(t, op, "after creating the bombs")

	// Right after the bombs, while they render: another tenant's object.
	start := time.Now()
	env.CreateSpec(t, procGood.res, procGood.kind, other, "good", map[string]any{"value": "fine"})
	cluster.Eventually(t, 30*time.Second, "Good converges beside the bombs", func(ctx context.Context) (bool, error) {
		return true, procConverged(ctx, procGood.res, other, "good", "value", "fine")
	})
	elapsed := time.Since(start)
	t.Logf("Good object converged %s after its creation, beside %d render bombs", elapsed.Round(time.Millisecond), len(bombs))
	if elapsed > goodWithin {
		t.Errorf("Good object converged after %s, want under %s: the bombs slowed a well-behaved kind", elapsed.Round(time.Millisecond), goodWithin)
	}
	procAlive(t, op, "after the Good object converged")

	for _, b := range bombs {
		msg := procWaitFailed(t, b.kind.res, ns, b.name, "RenderFailed", b.budgets, 30*time.Second)
		t.Logf("%s bomb: %s", b.name, msg)
		// A failed render applies nothing: the bomb's child never exists.
		if env.Exists(t, configMapGVR, ns, b.name) {
			t.Errorf("%s bomb: its ConfigMap %s/%s exists, want no child from a failed render", b.name, ns, b.name)
		}
	}
	procAlive(t, op, "after every bomb failed")

	// Every bomb is reported: within the grace period no render may still
	// run, so the CPU falls back to what an idle operator spends.
	time.Sleep(grace)
	before, err := op.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(idleWindow)
	after, err := op.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("operator CPU in the %s after the grace period that follows the last report: %s", idleWindow, after-before)
	if after-before > idleCPU {
		t.Errorf("operator used %s of CPU in %s after every bomb was reported, want under %s: a render still runs", after-before, idleWindow, idleCPU)
	}

	rss, err := op.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("operator peak RSS after the bombs: %.1f MiB", float64(rss)/(1<<20))
	if rss >= maxRSS {
		t.Errorf("operator peak RSS %.1f MiB, want under %d MiB", float64(rss)/(1<<20), maxRSS>>20)
	}

	// A new generation of the Spin starts a render that runs until its time
	// budget; SIGTERM lands while it is in flight. The drain must end it
	// (by its own budget or by canceling it) within the drain timeout.
	env.Patch(t, procSpin.res, ns, "spin", `{"spec":{"n":1001}}`)
	time.Sleep(300 * time.Millisecond)
	procAlive(t, op, "before SIGTERM")
	if err := op.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, took, err := op.Wait(drainTimeout)
	if err != nil {
		t.Fatalf("SIGTERM with a runaway render in flight: %v", err)
	}
	t.Logf("operator exited with code %d %s after SIGTERM (drain timeout %s)", code, took.Round(time.Millisecond), drainTimeout)
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	for _, line := range []string{"Shutting down", "Stopped"} {
		if !strings.Contains(op.Output(), line) {
			t.Errorf("operator output lacks %q after SIGTERM", line)
		}
	}
	// What the drained render left on the object: informative only, since
	// a drain may as well cancel the render and report nothing.
	if o, err := env.Get(t.Context(), procSpin.res, ns, "spin"); err == nil {
		c := cluster.Condition(o, "Reconciled")
		t.Logf("Spin after the drain: generation %d, observedGeneration %d, Reconciled=%s %s: %s", o.GetGeneration(), cluster.ObservedGeneration(o), c.Status, c.Reason, c.Message)
	}
}

// procTemplates is the absolute path of testdata/<dir>: the operator runs
// in a folder of its own.
func procTemplates(t *testing.T, dir string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// procStart builds the operator (once per test binary) and runs it on
// templates with a field manager of its own. The kubeconfig is the control
// plane's or a proxy's. Reloading is off: these tests change folders only
// between runs.
func procStart(t *testing.T, fieldManager, templates, kubeconfig string, extra ...string) *harness.Operator {
	t.Helper()
	bin, err := harness.BuildOperator(env.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run",
		"--templates", templates,
		"--kubeconfig", kubeconfig,
		"--field-manager", fieldManager,
		"--state-namespace", "default",
		"--reload-interval", "0",
	}, extra...)
	return harness.StartOperator(t, bin, args...)
}

// procWaitServing waits until the operator logs that it serves n kinds.
func procWaitServing(t *testing.T, op *harness.Operator, n int) {
	t.Helper()
	cluster.Eventually(t, 60*time.Second, fmt.Sprintf("operator serves %d kinds", n), func(context.Context) (bool, error) {
		if !op.Alive() {
			t.Fatalf("operator exited while starting; output:\n%s", op.Output())
		}
		if got := strings.Count(op.Output(), "Serving kind"); got < n {
			return false, fmt.Errorf("serves %d", got)
		}
		return true, nil
	})
}

// procAlive fails the test when the operator has exited.
func procAlive(t *testing.T, op *harness.Operator, step string) {
	t.Helper()
	if !op.Alive() {
		t.Fatalf("operator exited %s; output:\n%s", step, op.Output())
	}
}

// procStop sends SIGTERM and requires a clean exit.
func procStop(t *testing.T, op *harness.Operator, timeout time.Duration) time.Duration {
	t.Helper()
	if err := op.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, took, err := op.Wait(timeout)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("operator exited with code %d after SIGTERM, want 0", code)
	}
	return took
}

// procKind is a test kind of these tests, by resource and kind: named
// both ways, never one guessed from the other.
type procKind struct {
	res  schema.GroupVersionResource
	kind string
}

var (
	procBomb    = procKind{safetyGVR("bombs"), "Bomb"}
	procSpin    = procKind{safetyGVR("spins"), "Spin"}
	procGood    = procKind{safetyGVR("goods"), "Good"}
	procRestart = procKind{safetyGVR("restarts"), "Restart"}
	procFault   = procKind{safetyGVR("faults"), "Fault"}
)

// procConverged returns nil when the object's ConfigMap child holds want
// under key and the object is Reconciled=True at its generation.
func procConverged(ctx context.Context, res schema.GroupVersionResource, ns, name, key, want string) error {
	o, err := env.Get(ctx, res, ns, name)
	if err != nil {
		return err
	}
	if c, og := cluster.Condition(o, "Reconciled"), cluster.ObservedGeneration(o); c.Status != "True" || og != o.GetGeneration() {
		return fmt.Errorf("%s %s: generation %d, observedGeneration %d, Reconciled=%s %s: %s", res.Resource, name, o.GetGeneration(), og, c.Status, c.Reason, c.Message)
	}
	cm, err := env.Get(ctx, configMapGVR, ns, name)
	if err != nil {
		return fmt.Errorf("%s %s: ConfigMap: %w", res.Resource, name, err)
	}
	if got, _, _ := unstructured.NestedString(cm.Object, "data", key); got != want {
		return fmt.Errorf("%s %s: ConfigMap data.%s is %q, want %q", res.Resource, name, key, got, want)
	}
	return nil
}

// procWaitFailed waits for Reconciled=False with reason and a message that
// names a render budget ("render budget exceeded: <budget>"), any of them.
// It returns the message.
func procWaitFailed(t *testing.T, res schema.GroupVersionResource, ns, name, reason string, budgets []string, timeout time.Duration) string {
	t.Helper()
	var last string
	cluster.Eventually(t, timeout, fmt.Sprintf("%s %s: Reconciled=False %s naming budget %s", res.Resource, name, reason, strings.Join(budgets, " or ")),
		func(ctx context.Context) (bool, error) {
			o, err := env.Get(ctx, res, ns, name)
			if err != nil {
				return false, err
			}
			c := cluster.Condition(o, "Reconciled")
			last = c.Message
			if c.Status == "False" && c.Reason == reason {
				for _, b := range budgets {
					if strings.Contains(c.Message, "render budget exceeded: "+b) {
						return true, nil
					}
				}
			}
			return false, fmt.Errorf("now Reconciled=%s %s: %s", c.Status, c.Reason, c.Message)
		})
	return last
}
