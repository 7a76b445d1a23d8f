package safety

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/revision"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// TestRevisions: each version of a kind's folder an operator serves is a
// revision, recorded in the state namespace, and every object's status
// says the one it was reconciled with. The real binary, behind a proxy
// that counts its writes, on 20 objects:
//   - the first folder: revision 1 recorded, every object at 1;
//   - restarted on the same folder: still 1, no write to any object nor
//     to any record (found again from the cluster);
//   - the folder changed: revision 2, every object moves to it;
//   - two more changes under revisionHistoryLimit 2: the oldest record
//     deleted, the current and the two before it kept.
func TestRevisions(t *testing.T) {
	const (
		manager = "safety-revisions"
		objects = 20
	)
	res := safetyGVR("revisioneds")
	gr := res.GroupResource()
	selector := revision.LabelKind + "=" + revision.LabelValue(gr)
	records := func(ctx context.Context) (map[int64]string, error) {
		l, err := cs.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, err
		}
		out := map[int64]string{}
		for _, r := range l.Items {
			out[r.Revision] = r.Annotations[revision.AnnotationFingerprint]
		}
		return out, nil
	}
	// A record left by an earlier run on a shared control plane would
	// number ours.
	if err := cs.AppsV1().ControllerRevisions("default").DeleteCollection(t.Context(), metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: selector}); err != nil {
		t.Fatal(err)
	}

	templates := t.TempDir()
	folder := filepath.Join(templates, "revisioned")
	write := func(version int) {
		t.Helper()
		files := map[string]string{
			"kind.yaml":      "apiVersion: safety.tmplop.io/v1\nkind: Revisioned\nplural: revisioneds\nrevisionHistoryLimit: 2\nspec:\n  value: string\n",
			"configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name | quote }}\ndata:\n  value: {{ .Spec.value | quote }}\n  folder: \"v%d\"\n", version),
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
	// allAt waits until every object was reconciled with the folder of
	// version into revision number.
	allAt := func(number int64, version int) {
		t.Helper()
		cluster.Eventually(t, 60*time.Second, fmt.Sprintf("every object at revision %d", number), func(ctx context.Context) (bool, error) {
			l, err := env.Resource(res, ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			if len(l.Items) != objects {
				return false, fmt.Errorf("%d objects", len(l.Items))
			}
			for _, o := range l.Items {
				got, found, _ := unstructured.NestedInt64(o.Object, "status", "observedRevision")
				if !found || got != number {
					return false, fmt.Errorf("%s: observedRevision %d (found %v)", o.GetName(), got, found)
				}
				if c := cluster.Condition(&o, "Reconciled"); c.Status != "True" {
					return false, fmt.Errorf("%s: Reconciled=%s %s", o.GetName(), c.Status, c.Message)
				}
				cm, err := env.Get(ctx, configMapGVR, ns, o.GetName())
				if err != nil {
					return false, err
				}
				if v, _, _ := unstructured.NestedString(cm.Object, "data", "folder"); v != fmt.Sprintf("v%d", version) {
					return false, fmt.Errorf("%s: ConfigMap of folder %s", o.GetName(), v)
				}
			}
			return true, nil
		})
	}

	write(1)
	op := run()
	for i := range objects {
		env.CreateSpec(t, res, "Revisioned", ns, fmt.Sprintf("r%02d", i), map[string]any{"value": "x"})
	}
	allAt(1, 1)
	recs, err := records(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[1] == "" {
		t.Fatalf("records after the first folder: %v, want revision 1", recs)
	}
	procStop(t, op, 30*time.Second)

	// Restarted on the same folder: the revision is found again, and
	// nothing is written, to the objects, their children or the records
	// (--install-crds applies the CRD again, as at every start).
	mark := time.Now()
	op = run()
	if err := op.WaitForOutput(t.Context(), "Caught up"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // what a reconcile would still write
	allAt(1, 1)
	if n := p.Count(func(r harness.Request) bool {
		return harness.IsWrite(r) && !r.Time.Before(mark) &&
			(strings.Contains(r.Path, "/namespaces/"+ns+"/") || strings.Contains(r.Path, "/controllerrevisions"))
	}); n != 0 {
		t.Errorf("%d writes after a restart with the folder unchanged, want 0:\n%s", n, procWritesSince(p, mark))
	}
	if !strings.Contains(op.Output(), `"Serving the kind's folder as revision"`) || !strings.Contains(op.Output(), "revision=1") {
		t.Errorf("the operator did not log its revision 1:\n%s", op.Output())
	}
	procStop(t, op, 30*time.Second)

	// Three changes of the folder, each served by a new process.
	for version := 2; version <= 4; version++ {
		write(version)
		op = run()
		allAt(int64(version), version)
		procStop(t, op, 30*time.Second)
	}
	recs, err = records(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var kept []int64
	for n := range recs {
		kept = append(kept, n)
	}
	slices.Sort(kept)
	if fmt.Sprint(kept) != "[2 3 4]" {
		t.Errorf("records kept %v, want [2 3 4]: revisionHistoryLimit 2 keeps the current and two before it", kept)
	}
}

// procWritesSince lists p's write requests since mark, for failure messages.
func procWritesSince(p *harness.Proxy, mark time.Time) string {
	var out []string
	for _, r := range p.Requests() {
		if harness.IsWrite(r) && !r.Time.Before(mark) {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return strings.Join(out, "\n")
}
