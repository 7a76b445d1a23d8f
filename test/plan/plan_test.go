package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/plan"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

var (
	planApps    = cluster.GVR("plan.test.tmplop.io", "v1", "planapps")
	deployments = cluster.GVR("apps", "v1", "deployments")
	configMaps  = cluster.GVR("", "v1", "configmaps")
	// childResources are every resource the test's folders render.
	childResources = []schema.GroupVersionResource{deployments, configMaps}
)

const manager = "plan-test"

// objects is how many objects TestPlanMatchesReconcile plans: 200, or
// PLAN_TEST_OBJECTS (docs/plan.md's 1,000-object figure).
var objects = func() int {
	if n, err := strconv.Atoi(os.Getenv("PLAN_TEST_OBJECTS")); err == nil && n > 0 {
		return n
	}
	return 200
}()

// report is `operator plan -o json`.
type report struct {
	Objects []plan.Object `json:"objects"`
	Errors  []string      `json:"errors"`
	Total   struct {
		plan.Counts
		Objects   int     `json:"objects"`
		Changed   int     `json:"changed"`
		Status    int     `json:"status"`
		Suspended int     `json:"suspended"`
		Drifted   int     `json:"drifted"`
		Seconds   float64 `json:"seconds"`
	} `json:"total"`
}

// TestPlanMatchesReconcile: 200 objects served by the operator from the v1
// folder; the folder changes on disk to v2; the plan of v2 must list
// exactly the (object, child, action, field paths) that change when the
// operator then serves v2, as seen at the API server (each child's
// content and resourceVersion before and after), and the parents whose
// status changes; the plan must make no write (apiserver_request_total's
// write verbs without dry_run unchanged), and a plan of the unchanged
// folder exits 0 with no dry-run request at all.
func TestPlanMatchesReconcile(t *testing.T) {
	ctx := t.Context()
	installCRD(t)
	ns := env.Namespace(t)
	templates := t.TempDir()
	copyFolder(t, "v1", templates)
	for i := range objects {
		env.CreateSpec(t, planApps, "PlanApp", ns, fmt.Sprintf("app-%04d", i), map[string]any{"size": int64(i % 5)})
	}

	t.Log("the operator serves v1 until every object is reconciled, then stops")
	op := harness.StartOperator(t, bin, "run", "--kubeconfig", env.Kubeconfig, "--templates", templates,
		"--namespace", ns, "--state-namespace", ns, "--field-manager", manager)
	cluster.Eventually(t, 3*time.Minute, "every object reconciled from v1", func(ctx context.Context) (bool, error) {
		return allReconciled(ctx, ns)
	})
	stop(t, op)

	t.Log("a plan of the unchanged folder: exit 0, nothing listed, not one dry-run")
	before := scrapeWrites(t)
	start := time.Now()
	code, out, stderr := runPlan(t, ns, templates)
	unchangedTook := time.Since(start)
	after := scrapeWrites(t)
	if code != 0 {
		t.Fatalf("plan of the unchanged folder: exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	var r report
	decode(t, out, &r)
	if r.Total.Objects != objects || r.Total.Changed != 0 || len(r.Objects) != 0 {
		t.Fatalf("plan of the unchanged folder: %d objects, %d changed, %d listed; want %d, 0, 0\n%s", r.Total.Objects, r.Total.Changed, len(r.Objects), objects, out)
	}
	if d := after.sub(before); d.writes != 0 || d.dryRuns != 0 {
		t.Errorf("plan of the unchanged folder: %d writes and %d dry-run requests at the API server, want 0 and 0 (%v)", d.writes, d.dryRuns, d.byKey)
	}
	t.Logf("plan of the unchanged folder, %d objects: %s", objects, unchangedTook.Round(time.Millisecond))

	t.Log("the folder changes on disk to v2; the plan of it")
	if err := os.RemoveAll(filepath.Join(templates, "planapp")); err != nil {
		t.Fatal(err)
	}
	copyFolder(t, "v2", templates)
	liveBefore := snapshot(ctx, t, ns)
	before = scrapeWrites(t)
	start = time.Now()
	code, out, stderr = runPlan(t, ns, templates)
	took := time.Since(start)
	after = scrapeWrites(t)
	if code != 1 {
		t.Fatalf("plan of the changed folder: exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	d := after.sub(before)
	if d.writes != 0 {
		t.Errorf("the plan made %d writes at the API server, want 0: %v", d.writes, d.byKey)
	}
	if d.dryRuns == 0 {
		t.Errorf("the plan made no dry-run request: it cannot have asked the API server (%v)", d.byKey)
	}
	t.Logf("plan of the changed folder, %d objects: %s (%d dry-run applies)", objects, took.Round(time.Millisecond), d.dryRuns)
	decode(t, out, &r)
	planned, plannedStatus := plannedChanges(r)
	for _, o := range r.Objects {
		for _, c := range o.Children {
			if c.Local {
				t.Errorf("%s/%s: %s compared locally: the admin's dry-run was refused?", o.Namespace, o.Name, c.Label())
			}
		}
	}

	t.Log("the operator serves v2; what changed at the API server")
	op = harness.StartOperator(t, bin, "run", "--kubeconfig", env.Kubeconfig, "--templates", templates,
		"--namespace", ns, "--state-namespace", ns, "--field-manager", manager)
	cluster.Eventually(t, 3*time.Minute, "every object reconciled from v2", func(ctx context.Context) (bool, error) {
		return convergedV2(ctx, ns)
	})
	time.Sleep(2 * time.Second) // anything else the operator would write
	stop(t, op)
	liveAfter := snapshot(ctx, t, ns)
	observed, observedStatus := observedChanges(liveBefore, liveAfter)

	if len(observed) == 0 {
		t.Fatal("the operator changed nothing: the test's folder change is wrong")
	}
	if missing, extra := setDiff(observed, planned); len(missing)+len(extra) > 0 {
		t.Errorf("the plan differs from what the operator wrote:\nnot planned but written (%d): %s\nplanned but not written (%d): %s",
			len(missing), strings.Join(missing, "\n  "), len(extra), strings.Join(extra, "\n  "))
	}
	if missing, extra := setDiff(observedStatus, plannedStatus); len(missing)+len(extra) > 0 {
		t.Errorf("the planned status changes differ from the parents written:\nwritten, not planned: %q\nplanned, not written: %q", missing, extra)
	}
	t.Logf("plan and reconcile agree on %d child changes and %d status changes", len(observed), len(observedStatus))
}

// TestPlanReadOnly: an identity that may only read gets a local diff of
// the same children, marked local, instead of an error, and still writes
// nothing.
func TestPlanReadOnly(t *testing.T) {
	ctx := t.Context()
	installCRD(t)
	ns := env.Namespace(t)
	templates := t.TempDir()
	copyFolder(t, "v1", templates)
	for i := range 10 {
		env.CreateSpec(t, planApps, "PlanApp", ns, fmt.Sprintf("ro-%02d", i), map[string]any{"size": int64(i % 5)})
	}
	op := harness.StartOperator(t, bin, "run", "--kubeconfig", env.Kubeconfig, "--templates", templates,
		"--namespace", ns, "--state-namespace", ns, "--field-manager", manager)
	cluster.Eventually(t, 2*time.Minute, "every object reconciled from v1", func(ctx context.Context) (bool, error) {
		return allReconciled(ctx, ns)
	})
	stop(t, op)
	if err := os.RemoveAll(filepath.Join(templates, "planapp")); err != nil {
		t.Fatal(err)
	}
	copyFolder(t, "v2", templates)

	t.Log("the admin's plan, with dry-runs")
	code, out, stderr := runPlan(t, ns, templates)
	if code != 1 {
		t.Fatalf("admin plan: exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	var admin report
	decode(t, out, &admin)

	t.Log("the same plan as text: a summary line per object, the diffs, the total; no colour off a terminal")
	cmd := exec.Command(bin, "plan", "--kubeconfig", env.Kubeconfig, "--templates", templates, "--folder", "planapp",
		"-n", ns, "--state-namespace", ns, "--field-manager", manager)
	text, err := cmd.Output()
	if cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("text plan: exit %d (%v), want 1\n%s", cmd.ProcessState.ExitCode(), err, text)
	}
	for _, want := range []string{
		// Every object's status moves to the folder's new revision
		// (status.observedRevision), as the reconcile writes it.
		"planapp/" + ns + "/ro-01: 0 to change, 1 to create, 0 to prune, status changes\n",
		"planapp/" + ns + "/ro-00: 0 to change, 0 to create, 0 to prune, status changes\n  ~ status: .status.observedRevision\n",
		"  + ConfigMap " + ns + "/ro-01-extra (extra.yaml)\n",
		"planapp/" + ns + "/ro-03: 1 to change, 0 to create, 0 to prune, status changes\n",
		"  ~ Deployment " + ns + "/ro-03 (deployment.yaml)\n",
		"    +    tier: big\n",
		"    +  big: true\n",
		"planapp/" + ns + "/ro-04: 1 to change, 0 to create, 1 to prune, status changes\n",
		"  - ConfigMap " + ns + "/ro-04-settings (settings.yaml)\n",
		"Plan: 10 objects, 10 with changes: 6 to change, 2 to create, 2 to prune, 10 status changes, 0 errors",
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("text plan lacks %q:\n%s", want, text)
		}
	}
	if bytes.Contains(text, []byte("\033[")) {
		t.Errorf("text plan off a terminal has colour codes:\n%s", text)
	}

	t.Log("a folder whose kind is not served: exit 2, the error said, the other folder planned")
	if err := os.CopyFS(filepath.Join(templates, "ghostapp"), os.DirFS(filepath.Join("testdata", "ghost", "ghostapp"))); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(bin, "plan", "--kubeconfig", env.Kubeconfig, "--templates", templates,
		"-n", ns, "--state-namespace", ns, "--field-manager", manager, "-o", "json")
	withGhost, _ := cmd.Output()
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("plan with an unserved kind: exit %d, want 2\n%s", code, withGhost)
	}
	var ghost report
	decode(t, string(withGhost), &ghost)
	if len(ghost.Errors) != 1 || !strings.Contains(ghost.Errors[0], "GhostApp") || len(ghost.Objects) != len(admin.Objects) {
		t.Errorf("plan with an unserved kind: errors %q and %d objects, want GhostApp's error and the %d objects of planapp", ghost.Errors, len(ghost.Objects), len(admin.Objects))
	}
	if err := os.RemoveAll(filepath.Join(templates, "ghostapp")); err != nil {
		t.Fatal(err)
	}

	t.Log("a read-only user's plan")
	reader := readOnlyKubeconfig(ctx, t, ns, templates)
	before := scrapeWrites(t)
	code, out, stderr = runPlanAs(t, reader, ns, templates)
	after := scrapeWrites(t)
	if code != 1 {
		t.Fatalf("read-only plan: exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	if d := after.sub(before); d.writes != 0 {
		t.Errorf("the read-only plan made %d writes: %v", d.writes, d.byKey)
	}
	var ro report
	decode(t, out, &ro)
	adminSet, roSet := actions(admin), actions(ro)
	if missing, extra := setDiff(adminSet, roSet); len(missing)+len(extra) > 0 {
		t.Errorf("the read-only plan differs from the admin's:\nmissing: %q\nextra: %q", missing, extra)
	}
	for _, o := range ro.Objects {
		for _, c := range o.Children {
			if c.Action == plan.Change && !c.Local {
				t.Errorf("%s/%s: %s changed but not marked local: the dry-run was allowed to a read-only user?", o.Namespace, o.Name, c.Label())
			}
			if c.Error != "" {
				t.Errorf("%s/%s: %s: %s", o.Namespace, o.Name, c.Label(), c.Error)
			}
		}
	}
}

func installCRD(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if out, err := env.Kubectl(ctx, "apply", "--server-side", "-f", filepath.Join("testdata", "crds", "crd.yaml")); err != nil {
		t.Fatalf("install the CRD: %v\n%s", err, out)
	}
	if out, err := env.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd/planapps.plan.test.tmplop.io"); err != nil {
		t.Fatalf("CRD not established: %v\n%s", err, out)
	}
}

// servedV1 makes a namespace of objects of the names (size 1) and a
// templates directory of the v1 folder, and runs the operator (with
// extra flags) until every object is reconciled from it, then stops it.
func servedV1(t *testing.T, names []string, extra ...string) (ns, templates string) {
	t.Helper()
	installCRD(t)
	ns = env.Namespace(t)
	templates = t.TempDir()
	copyFolder(t, "v1", templates)
	for _, name := range names {
		env.CreateSpec(t, planApps, "PlanApp", ns, name, map[string]any{"size": int64(1)})
	}
	op := runOperator(t, ns, templates, extra...)
	cluster.Eventually(t, 2*time.Minute, "every object reconciled from v1", func(ctx context.Context) (bool, error) {
		return allReconciled(ctx, ns)
	})
	stop(t, op)
	return ns, templates
}

// runOperator starts the operator on the templates, watching ns.
func runOperator(t *testing.T, ns, templates string, extra ...string) *harness.Operator {
	t.Helper()
	return harness.StartOperator(t, bin, append([]string{"run", "--kubeconfig", env.Kubeconfig, "--templates", templates,
		"--namespace", ns, "--state-namespace", ns, "--field-manager", manager}, extra...)...)
}

func copyFolder(t *testing.T, version, templates string) {
	t.Helper()
	if err := os.CopyFS(filepath.Join(templates, "planapp"), os.DirFS(filepath.Join("testdata", version, "planapp"))); err != nil {
		t.Fatal(err)
	}
}

func stop(t *testing.T, op *harness.Operator) {
	t.Helper()
	if err := op.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, _, err := op.Wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

func runPlan(t *testing.T, ns, templates string) (code int, stdout, stderr string) {
	return runPlanAs(t, env.Kubeconfig, ns, templates)
}

// runPlanAs runs operator plan as kubeconfig's identity, with extra flags.
func runPlanAs(t *testing.T, kubeconfig, ns, templates string, extra ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"plan", "--kubeconfig", kubeconfig, "--templates", templates, "--kind", "PlanApp",
		"-n", ns, "--state-namespace", ns, "--field-manager", manager, "-o", "json"}, extra...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run plan: %v", err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

func decode(t *testing.T, out string, r *report) {
	t.Helper()
	*r = report{}
	if err := json.Unmarshal([]byte(out), r); err != nil {
		t.Fatalf("decode the plan: %v\n%s", err, out)
	}
}

func allReconciled(ctx context.Context, ns string) (bool, error) {
	list, err := env.Resource(planApps, ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	if len(list.Items) == 0 {
		return false, nil
	}
	for i := range list.Items {
		o := &list.Items[i]
		c := cluster.Condition(o, "Reconciled")
		if c.Status != metav1.ConditionTrue || c.ObservedGeneration != o.GetGeneration() {
			return false, nil
		}
	}
	return true, nil
}

// convergedV2 reports whether the cluster holds what v2 renders: the label
// on the big Deployments, the extra ConfigMaps of size 1, no settings of
// size 4, the greeting of size 2, big in the status of the big ones.
func convergedV2(ctx context.Context, ns string) (bool, error) {
	list, err := env.Resource(planApps, ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, o := range list.Items {
		size, _, _ := unstructured.NestedInt64(o.Object, "spec", "size")
		name := o.GetName()
		big, _, _ := unstructured.NestedBool(o.Object, "status", "big")
		if big != (size > 2) {
			return false, nil
		}
		d, err := env.Get(ctx, deployments, ns, name)
		if err != nil {
			return false, err
		}
		if (d.GetLabels()["tier"] == "big") != (size > 2) {
			return false, nil
		}
		if _, err := env.Get(ctx, configMaps, ns, name+"-extra"); (err == nil) != (size == 1) {
			return false, nil
		}
		s, err := env.Get(ctx, configMaps, ns, name+"-settings")
		if (err == nil) != (size != 4) {
			return false, nil
		}
		if size == 2 {
			if g, _, _ := unstructured.NestedString(s.Object, "data", "greeting"); g != "bonjour" {
				return false, nil
			}
		}
	}
	return true, nil
}

// live is the cluster at one moment: the operator's children by
// "Kind ns/name", and the parents.
type live struct {
	children map[string]*unstructured.Unstructured
	parents  map[string]*unstructured.Unstructured
}

func snapshot(ctx context.Context, t *testing.T, ns string) live {
	t.Helper()
	l := live{children: map[string]*unstructured.Unstructured{}, parents: map[string]*unstructured.Unstructured{}}
	for _, gvr := range childResources {
		list, err := env.Resource(gvr, ns).List(ctx, metav1.ListOptions{LabelSelector: ownership.ManagedSelector(manager)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			l.children[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = o
		}
	}
	list, err := env.Resource(planApps, ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		o := &list.Items[i]
		l.parents[o.GetNamespace()+"/"+o.GetName()] = o
	}
	return l
}

// change is one line of the sets compared: "parent | child | action |
// paths".
func change(parent, child string, action plan.Action, paths []string) string {
	return fmt.Sprintf("%s | %s | %s | %s", parent, child, action, strings.Join(paths, " "))
}

func plannedChanges(r report) (children, status []string) {
	for _, o := range r.Objects {
		parent := o.Namespace + "/" + o.Name
		if o.Error != "" {
			children = append(children, parent+" | error: "+o.Error)
		}
		for _, c := range o.Children {
			if c.Error != "" {
				children = append(children, change(parent, c.Label(), "error: "+plan.Action(c.Error), nil))
				continue
			}
			if c.Action != plan.Unchanged {
				children = append(children, change(parent, c.Label(), c.Action, c.Paths))
			}
		}
		if o.Status != nil {
			status = append(status, parent)
		}
	}
	return children, status
}

// observedChanges are the writes the operator made between two
// snapshots: a child created, deleted, or of another resourceVersion (its
// changed fields, as the plan computes them: plan.Paths of plan.Clean),
// and the parents of another resourceVersion.
func observedChanges(before, after live) (children, status []string) {
	keys := map[string]bool{}
	for k := range before.children {
		keys[k] = true
	}
	for k := range after.children {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		b, a := before.children[k], after.children[k]
		switch {
		case b == nil:
			children = append(children, change(parentOf(a), k, plan.Create, nil))
		case a == nil:
			children = append(children, change(parentOf(b), k, plan.Prune, nil))
		case a.GetResourceVersion() != b.GetResourceVersion():
			children = append(children, change(parentOf(a), k, plan.Change, plan.Paths(plan.Clean(b.Object), plan.Clean(a.Object))))
		}
	}
	for k, b := range before.parents {
		if a := after.parents[k]; a != nil && a.GetResourceVersion() != b.GetResourceVersion() {
			status = append(status, k)
		}
	}
	return children, status
}

func parentOf(child *unstructured.Unstructured) string {
	p, err := ownership.ParseParent(child.GetAnnotations()[ownership.AnnotationParent])
	if err != nil {
		return "?" + err.Error()
	}
	return p.Namespace + "/" + p.Name
}

func actions(r report) []string {
	var out []string
	for _, o := range r.Objects {
		for _, c := range o.Children {
			if c.Action != plan.Unchanged {
				out = append(out, change(o.Namespace+"/"+o.Name, c.Label(), c.Action, c.Paths))
			}
		}
	}
	return out
}

// setDiff returns what want has and got lacks, and the other way round.
func setDiff(want, got []string) (missing, extra []string) {
	w, g := map[string]bool{}, map[string]bool{}
	for _, s := range want {
		w[s] = true
	}
	for _, s := range got {
		g[s] = true
	}
	for _, s := range slices.Sorted(maps.Keys(w)) {
		if !g[s] {
			missing = append(missing, s)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(g)) {
		if !w[s] {
			extra = append(extra, s)
		}
	}
	return missing, extra
}

// writes counts the API server's requests that change state, from its
// apiserver_request_total: by its dry_run label, writes (none) apart from
// dry-runs (All). The API server's own lease renewals
// (coordination.k8s.io) are left out: they are not a client's.
type writes struct {
	writes, dryRuns int
	byKey           map[string]float64
}

func (w writes) sub(o writes) writes {
	out := writes{writes: w.writes - o.writes, dryRuns: w.dryRuns - o.dryRuns, byKey: map[string]float64{}}
	for k, v := range w.byKey {
		if d := v - o.byKey[k]; d != 0 {
			out.byKey[k] = d
		}
	}
	return out
}

var sample = regexp.MustCompile(`^apiserver_request_total\{([^}]*)\} (\S+)$`)
var label = regexp.MustCompile(`(\w+)="([^"]*)"`)

func scrapeWrites(t *testing.T) writes {
	t.Helper()
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	w := writes{byKey: map[string]float64{}}
	sawDryRunLabel := false
	for line := range strings.Lines(string(body)) {
		m := sample.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range label.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		if _, ok := labels["dry_run"]; ok {
			sawDryRunLabel = true
		}
		switch labels["verb"] {
		case "GET", "LIST", "WATCH", "CONNECT":
			continue
		}
		if labels["group"] == "coordination.k8s.io" {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("metric %q: %v", line, err)
		}
		key := labels["verb"] + " " + labels["resource"] + "." + labels["group"] + " dry_run=" + labels["dry_run"]
		w.byKey[key] += v
		if labels["dry_run"] != "" {
			w.dryRuns += int(v)
		} else {
			w.writes += int(v)
		}
	}
	if !sawDryRunLabel {
		t.Fatal("apiserver_request_total has no dry_run label: writes and dry-runs cannot be told apart")
	}
	return w
}

// readOnlyKubeconfig writes a kubeconfig of the admin's that impersonates
// a user who holds only the roles `operator rbac --plan` prints for the
// folders: reads, no dry-run.
func readOnlyKubeconfig(ctx context.Context, t *testing.T, ns, templates string) string {
	t.Helper()
	user := "plan-reader-" + ns
	cmd := exec.Command(bin, "rbac", "--templates", templates, "--crds", filepath.Join("testdata", "crds"), "--plan",
		"--name", user, "--namespace", ns, "--field-manager", manager)
	roles, err := cmd.Output()
	if err != nil {
		t.Fatalf("operator rbac --plan: %v", err)
	}
	bindings := fmt.Sprintf(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[1]s-plan}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s-plan}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: %[1]s-plan, namespace: %[2]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: %[1]s-plan}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: %[1]s}
`, user, ns)
	path := filepath.Join(t.TempDir(), "rbac.yaml")
	if err := os.WriteFile(path, append(roles, bindings...), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := env.Kubectl(ctx, "apply", "-f", path); err != nil {
		t.Fatalf("apply the plan's roles: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = env.Kubectl(context.Background(), "delete", "-f", path, "--wait=false")
	})
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// The admin's credentials, impersonating the reader: every request is
	// then the reader's.
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	return kc
}
