package safety

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// TestUndeclaredLookup: a folder that reads Secrets without declaring them
// fails to render, with a message saying so, and deletes nothing. Before,
// the lookup answered an empty list and Reconciled=True, and a template
// that rendered children per item rendered none, so pruning deleted them
// all (Crossplane function-go-templating #85).
func TestUndeclaredLookup(t *testing.T) {
	ns := env.Namespace(t)
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	peeks := safetyGVR("peeks")
	env.Create(t, peeks, ns, "apiVersion: safety.tmplop.io/v1\nkind: Peek\nmetadata: {name: p}\nspec: {peek: false}\n")
	env.WaitReconciled(t, peeks, ns, "p")
	env.Patch(t, peeks, ns, "p", `{"spec":{"peek":true}}`)
	env.WaitCondition(t, peeks, ns, "p", "Reconciled", "False", "RenderFailed", "Secret is not declared in kind.yaml lookups")
	time.Sleep(time.Second)
	if !env.Exists(t, configMapGVR, ns, "p-base") {
		t.Fatal("a failed render deleted a child")
	}
}

// TestClusterScopedParent: a cluster-scoped parent has no namespace of its
// own, so its children and its namespaced lookups are escapes that need
// the kind's opt-in. Before, both containment checks compared against its
// empty namespace and let everything through.
func TestClusterScopedParent(t *testing.T) {
	ns := env.Namespace(t)
	things := safetyGVR("clusterthings")
	cases := []struct {
		name, spec, want string
	}{
		{"child", `{namespace: ` + ns + `}`, `a child of cluster-scoped ClusterThing`},
		{"lookup", `{namespace: ` + ns + `, peekNamespace: kube-system}`, `ConfigMap in namespace "kube-system" from a cluster-scoped parent`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := ns + "-" + tc.name
			env.Create(t, things, "", "apiVersion: safety.tmplop.io/v1\nkind: ClusterThing\nmetadata: {name: "+name+"}\nspec: "+tc.spec+"\n")
			t.Cleanup(func() { _ = env.Resource(things, "").Delete(context.Background(), name, metav1.DeleteOptions{}) })
			env.WaitCondition(t, things, "", name, "Reconciled", "False", "RenderFailed", tc.want)
			if env.Exists(t, configMapGVR, ns, "clusterthing-"+name) {
				t.Fatal("the child was applied")
			}
		})
	}
}

// TestBuiltInKindWritesNothing: a folder for a built-in kind (v1 Namespace)
// that renders a child for team-* namespaces only. Before, every Namespace
// of the cluster, kube-system included, got labels, annotations and a
// finalizer. Now an object that renders no child gets no write at all, and
// the status of a built-in kind is never written.
func TestBuiltInKindWritesNothing(t *testing.T) {
	mark := time.Now()
	team := "team-" + rand.String(6)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), team, metav1.DeleteOptions{}) })
	other := env.Namespace(t)
	cluster.Eventually(t, 30*time.Second, "team-info in "+team, func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps(team).Get(ctx, "team-info", metav1.GetOptions{})
		return err == nil && cm.Data["team"] == strings.TrimPrefix(team, "team-"), err
	})
	time.Sleep(2 * time.Second)
	if env.Exists(t, configMapGVR, other, "team-info") {
		t.Fatal("a namespace not named team-* got a child")
	}
	namespaceWrite := regexp.MustCompile(`^/api/v1/namespaces/[^/]+(/status|/finalize)?$`)
	if n := proxy.Count(func(r harness.Request) bool {
		return harness.IsWrite(r) && !r.Time.Before(mark) && namespaceWrite.MatchString(r.Path)
	}); n != 0 {
		t.Fatalf("%d writes to Namespaces:\n%s", n, writesSince(mark))
	}
	for _, name := range []string{"kube-system", "default", other, team} {
		n, err := cs.CoreV1().Namespaces().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k := range n.Labels {
			if strings.Contains(k, "tmplop") || strings.Contains(k, "applyset") {
				t.Errorf("namespace %s has label %s", name, k)
			}
		}
		for k := range n.Annotations {
			if strings.Contains(k, "tmplop") || strings.Contains(k, "applyset") {
				t.Errorf("namespace %s has annotation %s", name, k)
			}
		}
		for _, f := range n.Finalizers {
			if strings.Contains(f, "tmplop") {
				t.Errorf("namespace %s has finalizer %s", name, f)
			}
		}
	}
}

// TestKindSelector: kind.yaml's selector restricts the objects a folder
// serves, on the server side of the watch.
func TestKindSelector(t *testing.T) {
	ns := env.Namespace(t)
	sel := safetyGVR("selecteds")
	env.Create(t, sel, ns, "apiVersion: safety.tmplop.io/v1\nkind: Selected\nmetadata: {name: a, labels: {team: a}}\n")
	env.Create(t, sel, ns, "apiVersion: safety.tmplop.io/v1\nkind: Selected\nmetadata: {name: b}\n")
	env.WaitReconciled(t, sel, ns, "a")
	time.Sleep(2 * time.Second)
	b, err := env.Get(t.Context(), sel, ns, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Object["status"]; ok || env.Exists(t, configMapGVR, ns, "b") {
		t.Fatal("an object outside the kind's selector was reconciled")
	}
	env.Patch(t, sel, ns, "b", `{"metadata":{"labels":{"team":"a"}}}`)
	env.WaitReconciled(t, sel, ns, "b")
}
