package safety

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/test/cluster"
)

var driftGK = schema.GroupKind{Group: "safety.tmplop.io", Kind: "Drift"}

// TestDriftWarn: with kind.yaml drift: warn, a child edited by hand in a
// field the operator applies is reported, with the field's JSON pointer,
// in the parent's Drifted condition and a Warning Event, and left as it
// is over several reconciles (its resourceVersion does not move). A field
// driftIgnore names is never applied: an edit of it is neither reported
// nor repaired. A spec change applies the new render all the same, and
// Drifted turns False.
func TestDriftWarn(t *testing.T) {
	ns := env.Namespace(t)
	drifts := safetyGVR("drifts")
	env.Create(t, drifts, ns, "apiVersion: safety.tmplop.io/v1\nkind: Drift\nmetadata: {name: warned}\nspec: {value: a}\n")
	env.WaitReconciled(t, drifts, ns, "warned")
	waitConfigMapData(t, ns, "warned", "owned", "a")
	if v, _ := configMapData(t, ns, "warned", "free"); v != "" {
		t.Fatalf("data.free, ignored, was applied: %q", v)
	}

	// An ignored path: neither reported nor repaired.
	env.Patch(t, configMapGVR, ns, "warned", `{"data":{"free":"mine"}}`)
	env.Patch(t, drifts, ns, "warned", `{"metadata":{"labels":{"poke":"1"}}}`) // a reconcile, whatever the child's event did
	time.Sleep(3 * time.Second)
	if o, err := env.Get(t.Context(), drifts, ns, "warned"); err != nil {
		t.Fatal(err)
	} else if c := conditionOf(o, "Drifted"); c != "" {
		t.Fatalf("an ignored path's edit is reported: Drifted=%s", c)
	}
	if v, _ := configMapData(t, ns, "warned", "free"); v != "mine" {
		t.Fatalf("an ignored path was repaired: data.free=%q", v)
	}

	// An owned field: reported with its path, left alone.
	env.Patch(t, configMapGVR, ns, "warned", `{"data":{"owned":"by hand"}}`)
	c := waitCond(t, drifts, ns, "warned", "Drifted", "True", "Drifted")
	if !strings.Contains(c.Message, "configmaps "+ns+"/warned: /data/owned") || strings.Contains(c.Message, "/data/free") {
		t.Errorf("Drifted's message does not list the child and exactly its drifted path: %q", c.Message)
	}
	if msg := waitEvent(t, ns, "warned", "Drifted"); !strings.Contains(msg, "/data/owned") {
		t.Errorf("the Drifted Event does not name the path: %q", msg)
	}
	_, rv := configMapData(t, ns, "warned", "owned")
	mark := time.Now()
	for i := range 3 {
		env.Patch(t, drifts, ns, "warned", `{"metadata":{"labels":{"poke":"`+string(rune('2'+i))+`"}}}`)
		time.Sleep(2 * time.Second)
	}
	if v, rv2 := configMapData(t, ns, "warned", "owned"); v != "by hand" || rv2 != rv {
		t.Fatalf("the drifted child was written: data.owned=%q, resourceVersion %s then %s", v, rv, rv2)
	}
	if n := writesTo(mark, "/configmaps/warned"); n != 0 {
		t.Fatalf("%d writes to the drifted child:\n%s", n, writesSince(mark))
	}
	if n := writesTo(mark, "/drifts/warned/status"); n != 0 {
		t.Errorf("%d status writes for an unchanged drift, want 0 (reported once):\n%s", n, writesSince(mark))
	}
	if s := mgr.Stats(driftGK); s == nil || s.DriftReported.Load() == 0 {
		t.Error("the drift counter did not move")
	}
	if n := mgr.TrueConditions(driftGK, "Drifted")["Drifted"]; n != 1 {
		t.Errorf("%d Drift objects counted drifted, want 1", n)
	}

	// A new render is applied: drift warn holds back repairs only.
	env.Patch(t, drifts, ns, "warned", `{"spec":{"value":"b"}}`)
	env.WaitReconciled(t, drifts, ns, "warned")
	waitConfigMapData(t, ns, "warned", "owned", "b")
	waitCond(t, drifts, ns, "warned", "Drifted", "False", "InSync")
	if v, _ := configMapData(t, ns, "warned", "free"); v != "mine" {
		t.Errorf("the ignored path did not stay as its editor left it: data.free=%q", v)
	}
}

// TestDriftRepair: by default a child edited by hand is applied again, and
// the repair is told in an Event on the parent and counted: never silent.
func TestDriftRepair(t *testing.T) {
	ns := env.Namespace(t)
	pauses := safetyGVR("pauses")
	env.Create(t, pauses, ns, "apiVersion: safety.tmplop.io/v1\nkind: Pause\nmetadata: {name: mended}\nspec: {value: a}\n")
	env.WaitReconciled(t, pauses, ns, "mended")
	waitConfigMapData(t, ns, "mended", "value", "a")
	before := int64(0)
	if s := mgr.Stats(pauseGK); s != nil {
		before = s.DriftRepaired.Load()
	}
	env.Patch(t, configMapGVR, ns, "mended", `{"data":{"value":"by hand"}}`)
	waitConfigMapData(t, ns, "mended", "value", "a")
	if msg := waitEvent(t, ns, "mended", "DriftRepaired"); !strings.Contains(msg, "configmaps "+ns+"/mended: /data/value") {
		t.Errorf("the DriftRepaired Event does not name the child and path: %q", msg)
	}
	if s := mgr.Stats(pauseGK); s == nil || s.DriftRepaired.Load() <= before {
		t.Error("the repair counter did not move")
	}
	if o, err := env.Get(t.Context(), pauses, ns, "mended"); err != nil {
		t.Fatal(err)
	} else if c := conditionOf(o, "Drifted"); c != "" {
		t.Errorf("a repaired drift left a Drifted condition: %s", c)
	}
}

// conditionOf is the status of obj's condition typ, "" when it has none.
func conditionOf(obj *unstructured.Unstructured, typ string) string {
	return string(cluster.Condition(obj, typ).Status)
}
