package safety

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

var (
	clusterRoleGVR = cluster.GVR("rbac.authorization.k8s.io", "v1", "clusterroles")
	pauseGK        = schema.GroupKind{Group: "safety.tmplop.io", Kind: "Pause"}
)

// objectWrites lists the in-process operator's write requests since mark
// to the objects of namespace ns and to the cluster-scoped objects whose
// path ends with one of also: every write but its Events.
func objectWrites(mark time.Time, ns string, also ...string) []string {
	var out []string
	for _, r := range proxy.Requests() {
		if !harness.IsWrite(r) || r.Time.Before(mark) || strings.HasSuffix(r.Path, "/events") || strings.Contains(r.Path, "/events/") {
			continue
		}
		mine := strings.Contains(r.Path, "/namespaces/"+ns+"/")
		for _, a := range also {
			mine = mine || strings.HasSuffix(r.Path, a)
		}
		if mine {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

// waitCond waits until the object's condition typ has status and reason,
// whatever the generation it was written at (a suspended object's status
// does not follow its spec), and returns it.
func waitCond(t *testing.T, res schema.GroupVersionResource, ns, name, typ, status, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	cluster.Eventually(t, cluster.ConditionTimeout, fmt.Sprintf("%s %s/%s: %s=%s %s", res.Resource, ns, name, typ, status, reason), func(ctx context.Context) (bool, error) {
		o, err := env.Get(ctx, res, ns, name)
		if err != nil {
			return false, err
		}
		got = cluster.Condition(o, typ)
		if string(got.Status) != status || got.Reason != reason {
			return false, fmt.Errorf("now %s=%s %s: %s", typ, got.Status, got.Reason, got.Message)
		}
		return true, nil
	})
	return got
}

// waitEvent waits for an Event with reason on the object and returns its
// message.
func waitEvent(t *testing.T, ns, name, reason string) string {
	t.Helper()
	var msg string
	cluster.Eventually(t, cluster.ConditionTimeout, fmt.Sprintf("a %s Event on %s/%s", reason, ns, name), func(ctx context.Context) (bool, error) {
		m, err := event(ctx, ns, name, reason)
		msg = m
		return err == nil, err
	})
	return msg
}

// configMapData reads one key of a ConfigMap, and its resourceVersion.
func configMapData(t *testing.T, ns, name, key string) (string, string) {
	t.Helper()
	cm, err := env.Get(t.Context(), configMapGVR, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(cm.Object, "data", key)
	return v, cm.GetResourceVersion()
}

func waitConfigMapData(t *testing.T, ns, name, key, want string) {
	t.Helper()
	cluster.Eventually(t, cluster.ConditionTimeout, fmt.Sprintf("configmap %s/%s data.%s=%q", ns, name, key, want), func(ctx context.Context) (bool, error) {
		cm, err := env.Get(ctx, configMapGVR, ns, name)
		if err != nil {
			return false, err
		}
		v, _, _ := unstructured.NestedString(cm.Object, "data", key)
		if v != want {
			return false, fmt.Errorf("now %q", v)
		}
		return true, nil
	})
}

// TestSuspend: an object suspended by the annotation gets one write, its
// Suspended condition, and nothing else for as long as it is suspended:
// its spec changes several times and its child is edited by hand, and no
// child is applied, none pruned, nothing of the parent written. Removing
// the annotation reconciles it at once: the spec is applied, the child
// repaired, Suspended=False. The kind's suspend field does the same. A
// suspended object that is deleted is still finalized: its cluster-scoped
// child deleted, its finalizer released.
func TestSuspend(t *testing.T) {
	ns := env.Namespace(t)
	pauses := safetyGVR("pauses")
	role := "/clusterroles/pause-" + ns + "-held"
	env.Create(t, pauses, ns, "apiVersion: safety.tmplop.io/v1\nkind: Pause\nmetadata: {name: held}\nspec: {value: a}\n")
	env.WaitReconciled(t, pauses, ns, "held")
	waitConfigMapData(t, ns, "held", "value", "a")

	// Suspended by the annotation: one status write.
	mark := time.Now()
	env.Patch(t, pauses, ns, "held", `{"metadata":{"annotations":{"operator.tmplop.io/suspend":"true"}}}`)
	c := waitCond(t, pauses, ns, "held", "Suspended", "True", "SuspendedByAnnotation")
	if !strings.Contains(c.Message, "operator.tmplop.io/suspend") {
		t.Errorf("Suspended's message does not say why: %q", c.Message)
	}
	waitEvent(t, ns, "held", "Suspended")
	suspendedSince := suspendedTime(t, pauses, ns, "held")
	// Spec changes and hand edits of the child, over a minute.
	for i, v := range []string{"b", "c", "x", "y", "z", "d"} {
		env.Patch(t, pauses, ns, "held", fmt.Sprintf(`{"spec":{"value":%q}}`, v))
		if i == 1 || i == 4 {
			env.Patch(t, configMapGVR, ns, "held", fmt.Sprintf(`{"data":{"value":"by hand"},"metadata":{"labels":{"edit":"e%d"}}}`, i))
		}
		time.Sleep(10 * time.Second)
	}
	writes := objectWrites(mark, ns, role)
	if len(writes) != 1 || writes[0] != "PATCH /apis/safety.tmplop.io/v1/namespaces/"+ns+"/pauses/held/status" {
		t.Fatalf("while suspended, %d writes, want the one of its status:\n%s", len(writes), strings.Join(writes, "\n"))
	}
	if v, _ := configMapData(t, ns, "held", "value"); v != "by hand" {
		t.Errorf("the child was written while suspended: data.value=%q", v)
	}
	if got := suspendedTime(t, pauses, ns, "held"); !got.Equal(&suspendedSince) {
		t.Errorf("Suspended's lastTransitionTime moved: %v, then %v", suspendedSince, got)
	}
	if n := mgr.TrueConditions(pauseGK, "Suspended")["Suspended"]; n != 1 {
		t.Errorf("%d Pause objects counted suspended, want 1", n)
	}

	// Resumed: reconciled at once, converges.
	env.Patch(t, pauses, ns, "held", `{"metadata":{"annotations":{"operator.tmplop.io/suspend":null}}}`)
	env.WaitReconciled(t, pauses, ns, "held")
	waitConfigMapData(t, ns, "held", "value", "d")
	waitCond(t, pauses, ns, "held", "Suspended", "False", "Resumed")
	waitEvent(t, ns, "held", "Resumed")

	// The kind's field: the same.
	env.Patch(t, pauses, ns, "held", `{"spec":{"suspend":true}}`)
	waitCond(t, pauses, ns, "held", "Suspended", "True", "SuspendedByField")
	mark = time.Now()
	env.Patch(t, pauses, ns, "held", `{"spec":{"value":"e"}}`)
	env.Patch(t, configMapGVR, ns, "held", `{"data":{"value":"by hand again"}}`)
	time.Sleep(5 * time.Second)
	if writes := objectWrites(mark, ns, role); len(writes) != 0 {
		t.Fatalf("while suspended by its field, %d writes, want none:\n%s", len(writes), strings.Join(writes, "\n"))
	}
	env.Patch(t, pauses, ns, "held", `{"spec":{"suspend":false}}`)
	env.WaitReconciled(t, pauses, ns, "held")
	waitConfigMapData(t, ns, "held", "value", "e")
	waitCond(t, pauses, ns, "held", "Suspended", "False", "Resumed")

	// Deletion wins: a suspended object is finalized.
	env.Patch(t, pauses, ns, "held", `{"metadata":{"annotations":{"operator.tmplop.io/suspend":"true"}}}`)
	waitCond(t, pauses, ns, "held", "Suspended", "True", "SuspendedByAnnotation")
	if o, err := env.Get(t.Context(), pauses, ns, "held"); err != nil || len(o.GetFinalizers()) == 0 {
		t.Fatalf("the Pause has no finalizer to run (err %v)", err)
	}
	env.Delete(t, pauses, ns, "held")
	env.WaitGone(t, pauses, ns, "held", 30*time.Second)
	env.WaitGone(t, clusterRoleGVR, "", "pause-"+ns+"-held", 30*time.Second)
}

func suspendedTime(t *testing.T, res schema.GroupVersionResource, ns, name string) metav1.Time {
	t.Helper()
	o, err := env.Get(t.Context(), res, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Suspended" {
			var tm metav1.Time
			if err := tm.UnmarshalQueryParameter(fmt.Sprint(m["lastTransitionTime"])); err != nil {
				t.Fatal(err)
			}
			return tm
		}
	}
	t.Fatal("no Suspended condition")
	return metav1.Time{}
}
