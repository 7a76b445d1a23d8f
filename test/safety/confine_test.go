package safety

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tmplop/operator/test/cluster"
)

var procReach = procKind{safetyGVR("reaches"), "Reach"}

// TestNamespaceConfinement: run --namespace team-a watches team-a only, so
// a child in team-b would always look free to it and be applied with
// force over whatever holds the name there, then deleted by finalize. A
// folder that allows children elsewhere (allowClusterScoped) still gets
// none outside the watched namespace: the object is refused with a clear
// condition, and the object in team-b is never written.
func TestNamespaceConfinement(t *testing.T) {
	ctx := t.Context()
	teamA, teamB := env.Namespace(t), env.Namespace(t)
	taken, err := cs.CoreV1().ConfigMaps(teamB).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "taken"}, Data: map[string]string{"owner": "team-b"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const manager = "safety-confine"
	op := procStart(t, manager, procTemplates(t, "confine"), env.Kubeconfig, "--namespace", teamA)
	procWaitServing(t, op, 1)

	// At home: converges, as a control.
	env.CreateSpec(t, procReach.res, procReach.kind, teamA, "home", map[string]any{})
	cluster.Eventually(t, 30*time.Second, "Reach home converges in the watched namespace", func(ctx context.Context) (bool, error) {
		return true, procConverged(ctx, procReach.res, teamA, "home", "owner", "home")
	})

	env.CreateSpec(t, procReach.res, procReach.kind, teamA, "away", map[string]any{"target": teamB, "name": "taken"})
	o := env.WaitCondition(t, procReach.res, teamA, "away", "Reconciled", "False", "RenderFailed",
		fmt.Sprintf("outside the namespace the operator watches (run --namespace %s)", teamA))
	t.Logf("Reach away: Reconciled=False RenderFailed: %s", cluster.Condition(o, "Reconciled").Message)

	procAlive(t, op, "after the refusal")
	got, err := cs.CoreV1().ConfigMaps(teamB).Get(ctx, "taken", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("team-b's ConfigMap: %v", err)
	}
	if got.ResourceVersion != taken.ResourceVersion || got.Data["owner"] != "team-b" {
		t.Errorf("team-b's ConfigMap changed: resourceVersion %s -> %s, data %v", taken.ResourceVersion, got.ResourceVersion, got.Data)
	}
	for _, mf := range got.ManagedFields {
		if mf.Manager == manager {
			t.Errorf("team-b's ConfigMap has fields of the operator's manager %s: %+v", manager, mf)
		}
	}
	procStop(t, op, 15*time.Second)
}
