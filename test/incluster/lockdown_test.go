package incluster

import (
	"context"
	"strings"
	"testing"
	"time"

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

// testDefaultAccount: Plain's folder names no account, so under
// --default-service-account its calls are the default account's: the
// ResourceQuota that account may not create is refused by the API server
// as that account, not written with the operator's rights.
func testDefaultAccount(t *testing.T) {
	testNS := env.Namespace(t)
	addFolder(t, "testdata/templates/plain", "plain")
	waitEvent(t, "plain", "KindStarted")
	env.CreateSpec(t, plains, "Plain", testNS, "p1", map[string]any{})
	o := env.WaitCondition(t, plains, testNS, "p1", "Reconciled", "False", "ApplyFailed", "forbidden", "system:serviceaccount:"+ns+":"+defaultAccount)
	t.Logf("Plain p1: Reconciled=False ApplyFailed: %s", cluster.Condition(o, "Reconciled").Message)
	if _, err := cs.CoreV1().ResourceQuotas(testNS).Get(t.Context(), "p1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ResourceQuota p1: got %v, want NotFound: the default account may not create it", err)
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
