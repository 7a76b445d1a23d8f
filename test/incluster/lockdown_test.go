package incluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tmplop/operator/test/cluster"
)

// The kind-folder lockdown: whoever may write a labelled ConfigMap in the
// operator's namespace adds a kind, so what a folder can reach must be
// bounded by what the operator's installer chose, never by the folder.

var (
	gadgets = cluster.GVR("incluster.tmplop.io", "v1", "gadgets")
	writers = cluster.GVR("incluster.tmplop.io", "v1", "writers")
	plains  = cluster.GVR("incluster.tmplop.io", "v1", "plains")
)

// addFolder delivers testdata/<dir> as the kind-folder ConfigMap name.
func addFolder(t *testing.T, dir, name string) {
	t.Helper()
	cms := cs.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(t.Context(), folderConfigMap(t, dir, name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// testOwnAccount: Plain's folder names no account, so under
// --default-service-account its calls are those of the account that agrees
// to serve its kind (operator rbac generated incluster-test-kind-plain,
// annotated for Plain): the ResourceQuota that account may not create is
// refused by the API server as that account, not written with the
// operator's rights nor with the default account's.
func testOwnAccount(t *testing.T) {
	testNS := env.Namespace(t)
	addFolder(t, "testdata/templates/plain", "plain")
	waitEvent(t, "plain", "KindStarted")
	env.CreateSpec(t, plains, "Plain", testNS, "p1", map[string]any{})
	waitChildData(t, testNS, "p1-plain", "owner", "p1")
	o := env.WaitCondition(t, plains, testNS, "p1", "Reconciled", "False", "ApplyFailed", "forbidden",
		`cannot patch resource "resourcequotas"`, "system:serviceaccount:"+ns+":incluster-test-kind-plain")
	t.Logf("Plain p1: Reconciled=False ApplyFailed: %s", cluster.Condition(o, "Reconciled").Message)
	if _, err := cs.CoreV1().ResourceQuotas(testNS).Get(t.Context(), "p1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ResourceQuota p1: got %v, want NotFound: the kind's account may not create it", err)
	}
}

// testDefaultAccountHoldsNothing: a folder added later (testdata/escalation)
// that names no account, and that no account agrees to serve, runs as the
// default account, which deploy/ binds to nothing. It serves ConfigMaps, a
// kind the shipped folders may write, allows children outside their
// parent's namespace and renders a Pod into kube-system: had the default
// account the union of the shipped folders' rights (Pods cluster-wide), the
// Pod would be created. The kind is refused before it starts, with a
// Warning Event KindForbidden on its ConfigMap naming the account and the
// rule it lacks; no Pod exists, and the labelled ConfigMap is left as it
// was.
func testDefaultAccountHoldsNothing(t *testing.T) {
	ctx := t.Context()
	testNS := env.Namespace(t)
	const pod = "escalated-e1"
	pods := cs.CoreV1().Pods("kube-system")
	t.Cleanup(func() { _ = pods.Delete(context.Background(), pod, metav1.DeleteOptions{}) })
	parent, err := cs.CoreV1().ConfigMaps(testNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "e1", Labels: map[string]string{"incluster.tmplop.io/escalate": "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addFolder(t, "testdata/escalation/escalate", "escalate")

	// Until the Event comes, a Pod in kube-system ends the test at once:
	// it is the escalation itself.
	var msg string
	var reasons []string
	for deadline := time.Now().Add(30 * time.Second); msg == "" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if p, err := pods.Get(ctx, pod, metav1.GetOptions{}); err == nil {
			manager := ""
			if len(p.ManagedFields) > 0 {
				manager = p.ManagedFields[0].Manager
			}
			t.Fatalf("Pod kube-system/%s was created (field manager %q, app.kubernetes.io/managed-by %q): a folder that runs as the default account reached kube-system",
				pod, manager, p.Labels["app.kubernetes.io/managed-by"])
		}
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=ConfigMap,involvedObject.name=escalate"})
		if err != nil {
			t.Fatal(err)
		}
		reasons = reasons[:0]
		for _, e := range list.Items {
			reasons = append(reasons, e.Reason+": "+e.Message)
			if e.Reason == "KindForbidden" {
				msg = e.Message
			}
		}
	}
	if msg == "" {
		t.Fatalf("no Event KindForbidden on ConfigMap escalate within 30s; its Events: %q", reasons)
	}
	t.Logf("Event KindForbidden on ConfigMap escalate: %s", msg)
	for _, want := range []string{"ServiceAccount " + ns + "/" + defaultAccount, `may not list configmaps (API group "") cluster-wide`, "ConfigMap"} {
		if !strings.Contains(msg, want) {
			t.Errorf("KindForbidden Event %q does not say %q", msg, want)
		}
	}
	// The kind never ran: still no Pod after a while, the parent untouched.
	time.Sleep(3 * time.Second)
	if _, err := pods.Get(ctx, pod, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Pod kube-system/%s: got %v, want NotFound", pod, err)
	}
	after, err := cs.CoreV1().ConfigMaps(testNS).Get(ctx, "e1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != parent.ResourceVersion || len(after.Finalizers) > 0 {
		t.Errorf("the parent ConfigMap was written (resourceVersion %s -> %s, finalizers %v)", parent.ResourceVersion, after.ResourceVersion, after.Finalizers)
	}
	lead, _ := leader(t)
	if !strings.Contains(lead.Output(), "Kind folder refused: its ServiceAccount may not watch the kind") {
		t.Errorf("the leader did not log the refusal")
	}

	// What the default account may do at all: what any account may that
	// nobody bound to anything (discovery, reviews of oneself, the cluster's
	// public trust bundles), nothing more.
	canI := func(user string) map[string]bool {
		out, err := env.Kubectl(ctx, "auth", "can-i", "--list", "-n", "kube-system", "--as="+user)
		if err != nil {
			t.Fatalf("kubectl auth can-i --list as %s: %v\n%s", user, err, out)
		}
		t.Logf("kubectl auth can-i --list -n kube-system as %s:\n%s", user, out)
		lines := map[string]bool{}
		for _, line := range strings.Split(out, "\n")[1:] {
			if f := strings.Fields(line); len(f) > 0 {
				lines[strings.Join(f, " ")] = true
			}
		}
		return lines
	}
	nobody := canI("system:serviceaccount:" + ns + ":incluster-nobody")
	for line := range canI("system:serviceaccount:" + ns + ":" + defaultAccount) {
		if !nobody[line] {
			t.Errorf("the default account may %q, which an account bound to nothing may not: every folder added later would have it", line)
		}
	}
}

// testKindConflict: a second folder for a kind that a folder serves is
// refused with a KindConflict Event naming both, however its ConfigMap is
// named; the first keeps serving, and nothing of its children is pruned
// (the second renders nothing: had it taken over, every child would go).
func testKindConflict(t *testing.T) {
	ctx := t.Context()
	testNS := env.Namespace(t)
	addFolder(t, "testdata/templates/gadget", "gadget")
	waitEvent(t, "gadget", "KindStarted")
	env.CreateSpec(t, gadgets, "Gadget", testNS, "g1", map[string]any{"size": "small"})
	waitChildData(t, testNS, "g1-gadget", "size", "small")
	before, err := cs.CoreV1().ConfigMaps(testNS).Get(ctx, "g1-gadget", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	addFolder(t, "testdata/conflict/aa-gadget", "aa-gadget")
	msg := waitEvent(t, "aa-gadget", "KindConflict")
	for _, both := range []string{"configmap/" + ns + "/aa-gadget", "configmap/" + ns + "/gadget"} {
		if !strings.Contains(msg, both) {
			t.Errorf("KindConflict Event %q does not name %s", msg, both)
		}
	}
	// Still the first folder's: a change converges through its template,
	// and the child is the same object.
	env.Patch(t, gadgets, testNS, "g1", `{"spec":{"size":"large"}}`)
	waitChildData(t, testNS, "g1-gadget", "size", "large")
	after, err := cs.CoreV1().ConfigMaps(testNS).Get(ctx, "g1-gadget", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("g1's child after the second folder came: %v", err)
	}
	if after.UID != before.UID {
		t.Errorf("g1's child was deleted and made again (UID %s -> %s)", before.UID, after.UID)
	}
	lead, _ := leader(t)
	for _, line := range strings.Split(lead.Output(), "\n") {
		if strings.Contains(line, "aa-gadget") && strings.Contains(line, "starting the kind") {
			t.Errorf("the leader started the second folder: %s", line)
		}
	}
}

// testNoFolderWritesFolders: a folder whose child would be a kind-folder
// ConfigMap in the operator's namespace is refused, although its kind.yaml
// allows children outside the parent's namespace; no such ConfigMap exists.
func testNoFolderWritesFolders(t *testing.T) {
	testNS := env.Namespace(t)
	addFolder(t, "testdata/templates/writer", "writer")
	waitEvent(t, "writer", "KindStarted")
	env.CreateSpec(t, writers, "Writer", testNS, "w1", map[string]any{})
	o := env.WaitCondition(t, writers, testNS, "w1", "Reconciled", "False", "RenderFailed", `namespace "`+ns+`" is the operator's own`)
	t.Logf("Writer w1: Reconciled=False RenderFailed: %s", cluster.Condition(o, "Reconciled").Message)
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "w1-folder", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap %s/w1-folder: got %v, want NotFound", ns, err)
	}
}

// testAgreement: a folder that names another team's ServiceAccount, which
// does not list its kind in operator.tmplop.io/serves, is refused with an
// Event saying how the account's owner would agree; an account that
// withdraws its agreement stops the kind it served.
func testAgreement(t *testing.T) {
	ctx := t.Context()
	addFolder(t, "testdata/refused/borrower", "borrower")
	msg := waitEvent(t, "borrower", "IdentityRefused")
	if !strings.Contains(msg, "limited-kind") || !strings.Contains(msg, "Borrower.incluster.tmplop.io") {
		t.Errorf("IdentityRefused Event %q does not name the account and the kind", msg)
	}
	lead, _ := leader(t)
	if !strings.Contains(lead.Output(), "its ServiceAccount does not agree") {
		t.Errorf("the leader did not log the refusal")
	}

	addFolder(t, "testdata/templates/limited", "limited-again")
	waitEvent(t, "limited-again", "KindStarted")
	sas := cs.CoreV1().ServiceAccounts(ns)
	withdraw := []byte(`{"metadata":{"annotations":{"operator.tmplop.io/serves":null}}}`)
	if _, err := sas.Patch(ctx, "limited-kind", types.MergePatchType, withdraw, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		agree := []byte(`{"metadata":{"annotations":{"operator.tmplop.io/serves":"Limited.incluster.tmplop.io"}}}`)
		_, _ = sas.Patch(context.Background(), "limited-kind", types.MergePatchType, agree, metav1.PatchOptions{})
	})
	// ServiceAccounts are read at each sync, not watched: a change of the
	// folder (or --reload-interval) brings the next one.
	touch := []byte(`{"metadata":{"annotations":{"test/touched":"` + time.Now().Format(time.RFC3339Nano) + `"}}}`)
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "limited-again", types.MergePatchType, touch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, "limited-again", "IdentityRefused")
	cluster.Eventually(t, 10*time.Second, "the leader stops the kind", func(context.Context) (bool, error) {
		return strings.Contains(lead.Output(), "Kind's ServiceAccount no longer agrees: stopping the kind"), nil
	})
}
