package render

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAbandon: a render stuck in one long function call, which no guard
// can interrupt, is abandoned after its deadline plus the grace period; the
// caller is freed at once, the set counts it until it ends, and past
// maxRunaway renders of one object the set refuses new renders of that
// object instead of piling them up.
func TestAbandon(t *testing.T) {
	set := mustParse(t, map[string]string{"a.yaml": `{{ $k := genPrivateKey "rsa" }}{{ $k := genPrivateKey "rsa" }}{{ $k := genPrivateKey "rsa" }}`})
	b := Budget{Timeout: time.Millisecond}
	for i := range maxRunaway {
		start := time.Now()
		_, err := set.Children(t.Context(), Input{Budget: b})
		be, ok := errors.AsType[*BudgetError](err)
		if !ok || be.Budget != BudgetTime || !strings.Contains(err.Error(), "abandoned") {
			// A fast machine may finish in time; then nothing was abandoned.
			if err == nil || ok && be.Budget == BudgetTime {
				t.Skipf("render %d finished within its grace period (%v): nothing to abandon on this machine", i, err)
			}
			t.Fatalf("err = %v, want an abandoned time budget error", err)
		}
		if d := time.Since(start); d > 200*time.Millisecond {
			t.Errorf("abandoning took %s", d)
		}
	}
	if set.Runaway() != maxRunaway {
		t.Fatalf("Runaway() = %d, want %d", set.Runaway(), maxRunaway)
	}
	_, err := set.Children(t.Context(), Input{Budget: b})
	if be, ok := errors.AsType[*BudgetError](err); !ok || be.Budget != BudgetDegraded || be.RequeueMark().Terminal {
		t.Fatalf("err = %v, want the degraded refusal", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for set.Runaway() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if set.Runaway() != 0 {
		t.Fatalf("Runaway() = %d after the renders ended", set.Runaway())
	}
}

// TestAbandonedRenderStops: a render abandoned in a series of long but
// bounded calls stops at its next call: no goroutine runs on past the grace
// period plus one call, and the CPU is not consumed afterwards.
func TestAbandonedRenderStops(t *testing.T) {
	alternation := strings.Repeat("(a|b)", 100) + "c"
	call := `{{ $x := regexMatch "` + alternation + `" $s }}`
	set := mustParse(t, map[string]string{"a.yaml": `{{ $s := repeat 10000 "ab" }}` + strings.Repeat(call, 200)})
	b := Budget{Timeout: 4 * time.Millisecond, MaxOutputBytes: 1 << 30}
	quiet(t)

	start := time.Now()
	_, err := set.Children(t.Context(), Input{Budget: b})
	if be, ok := errors.AsType[*BudgetError](err); !ok || be.Budget != BudgetTime {
		t.Fatalf("err = %v, want a time budget error", err)
	}
	if !strings.Contains(err.Error(), "abandoned") {
		t.Skipf("the render stopped before it was abandoned (%v): nothing to test on this machine", err)
	}
	// One call runs for tens of milliseconds (a few hundred with -race),
	// the series of 200 for seconds: the render must end within the grace
	// period plus about one call.
	deadline := start.Add(b.Timeout + b.grace() + 2*time.Second)
	for set.Runaway() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := set.Runaway(); n != 0 {
		t.Fatalf("Runaway() = %d %s after the render started: the abandoned render runs on", n, time.Since(start))
	}
	t.Logf("abandoned render ended %s after it started", time.Since(start))
	if used := cpuOver(300 * time.Millisecond); used > 100*time.Millisecond {
		t.Errorf("the process used %s of CPU in 300 ms after the render ended", used)
	}
}

// TestRunawayPerObject: one object's runaway renders refuse that object's
// renders, not those of the other objects of the same folder.
func TestRunawayPerObject(t *testing.T) {
	alternation := strings.Repeat("(a|b)", 100) + "c"
	set := mustParse(t, map[string]string{"a.yaml": `{{ if .Spec.bomb }}{{ $s := repeat 15000 "ab" }}` +
		strings.Repeat(`{{ $x := regexMatch "`+alternation+`" $s }}`, 20) + `{{ end }}`})
	object := func(name, uid string, bomb bool) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": name, "namespace": "ns", "uid": uid}, "spec": map[string]any{"bomb": bomb}}
	}
	b := Budget{Timeout: 5 * time.Millisecond}
	a := Input{Object: object("a", "1", true), Budget: b}
	// On a loaded machine (a -race build beside other packages' tests) a
	// render may reach its deadline before its first long call began, and
	// stop at once instead of being abandoned, or right after it was: the
	// premise, maxRunaway renders of a still running, is checked before
	// the render that must be refused, and tried again.
	var why error
	held := false
	for attempt := 0; attempt < 5 && !held; attempt++ {
		waitRunaways(t, set)
		why = nil
		for range maxRunaway {
			_, err := set.Children(t.Context(), a)
			if be, ok := errors.AsType[*BudgetError](err); !ok || be.Budget != BudgetTime || !strings.Contains(err.Error(), "abandoned") {
				why = err
				break
			}
		}
		held = why == nil && set.runaway.of(objectKey(a.Object)) == maxRunaway
	}
	if !held {
		t.Skipf("in 5 attempts, %d renders of a were never abandoned and running at once (last: %v): nothing to test on this machine", maxRunaway, why)
	}
	_, err := set.Children(t.Context(), a)
	if be, ok := errors.AsType[*BudgetError](err); !ok || be.Budget != BudgetDegraded || !strings.Contains(err.Error(), "of this object") {
		t.Errorf("a: err = %v, want the degraded refusal", err)
	}
	// The other objects render nothing costly: a roomy deadline, so that a
	// loaded machine cannot abandon them too.
	roomy := Budget{Timeout: 5 * time.Second}
	for _, in := range []Input{{Object: object("b", "2", false), Budget: roomy}, {Object: object("a", "3", false), Budget: roomy}} {
		if _, err := set.Children(t.Context(), in); err != nil {
			t.Errorf("%v: err = %v, want the render of another object to pass", in.Object["metadata"], err)
		}
	}
	if n := set.Runaway(); n < 1 || n > maxRunaway {
		t.Errorf("Runaway() = %d, want a's abandoned renders still running, at most %d", n, maxRunaway)
	}
	waitRunaways(t, set)
	if _, err := set.Children(t.Context(), Input{Object: object("a", "1", false), Budget: roomy}); err != nil {
		t.Errorf("a after its renders ended: err = %v", err)
	}
}

// waitRunaways waits until no abandoned render of set runs.
func waitRunaways(t *testing.T, set *Set) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for set.Runaway() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := set.Runaway(); n > 0 {
		t.Fatalf("Runaway() = %d after 10 s: the abandoned renders run on", n)
	}
}

// cpuOver is the CPU time the process uses during d.
func cpuOver(d time.Duration) time.Duration {
	before := cpuTime()
	time.Sleep(d)
	return cpuTime() - before
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// quiet waits until the renders that earlier tests abandoned have ended, so
// that the CPU measured is this test's.
func quiet(t *testing.T) {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		if cpuOver(100*time.Millisecond) < 20*time.Millisecond {
			return
		}
	}
	t.Log("the process never went quiet; measuring anyway")
}
