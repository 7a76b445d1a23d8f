package reconcile

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/health"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/status"
)

func st(label string, s health.Status, reason, msg string) childState {
	return childState{template: strings.ToLower(strings.Split(label, "/")[0]) + ".yaml", label: label, live: true,
		health: health.Result{Status: s, Reason: reason, Message: msg}}
}

func TestReadiness(t *testing.T) {
	dep := st("Deployment/web", health.InProgress, "LessAvailable", "0/2 available")
	svc := st("Service/web", health.Current, "", "Service is ready")
	job := st("Job/migrate", health.Failed, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	unknown := st("Database/db", health.Unknown, "ReadyWhenFailed", "readyWhen: boom")
	waiting := childState{template: "deployment.yaml", label: "Deployment/web", waiting: true}
	w := wait{template: "deployment.yaml", dep: "migrate-job.yaml", on: "Job/migrate: InProgress: running: 0 succeeded, 1 active, 0 failed"}
	type want struct {
		status, reason, message string // of Ready
		other, otherReason      string // Reconciling or Stalled, if any
	}
	cases := []struct {
		name   string
		states []childState
		waits  []wait
		held   bool
		want   want
	}{
		{name: "all current", states: []childState{svc, st("Deployment/web", health.Current, "", "")},
			want: want{status: "True", reason: "Ready", message: "all 2 children are ready"}},
		{name: "no children", want: want{status: "True", reason: "Ready", message: "no children"}},
		{name: "a Deployment coming up", states: []childState{dep, svc},
			want: want{status: "False", reason: "ChildrenNotReady", message: "Deployment/web 0/2 available", other: "Reconciling", otherReason: "Progressing"}},
		{name: "unknown health is not ready", states: []childState{unknown},
			want: want{status: "False", reason: "ChildrenNotReady", message: "Database/db Unknown: readyWhen: boom", other: "Reconciling", otherReason: "Progressing"}},
		{name: "a failed Job: its reason, and Stalled", states: []childState{job, dep},
			want: want{status: "False", reason: "BackoffLimitExceeded", message: "Job/migrate failed: Job has reached the specified backoff limit; Deployment/web 0/2 available",
				other: "Stalled", otherReason: "ChildFailed"}},
		{name: "a failed child with an invalid reason", states: []childState{st("Pod/p", health.Failed, "not a reason!", "OOMKilled")},
			want: want{status: "False", reason: "ChildFailed", message: "Pod/p failed: OOMKilled", other: "Stalled", otherReason: "ChildFailed"}},
		{name: "waiting for a dependency", states: []childState{st("Job/migrate", health.InProgress, "JobRunning", "running: 0 succeeded, 1 active, 0 failed"), waiting}, waits: []wait{w},
			want: want{status: "False", reason: "WaitingForDependencies",
				message: "Job/migrate running: 0 succeeded, 1 active, 0 failed; deployment.yaml waits for migrate-job.yaml (Job/migrate: InProgress: running: 0 succeeded, 1 active, 0 failed)",
				other:   "Reconciling", otherReason: "WaitingForDependencies"}},
		{name: "a prune held back", states: []childState{svc}, held: true,
			want: want{status: "False", reason: "PruneHeld", message: "a prune is held back (see PruneHeld)", other: "Reconciling", otherReason: "PruneHeld"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conds, ready := readiness(tc.states, tc.waits, tc.held, 7)
			r := meta.FindStatusCondition(conds, status.ConditionReady)
			if r == nil || string(r.Status) != tc.want.status || r.Reason != tc.want.reason || r.Message != tc.want.message || r.ObservedGeneration != 7 {
				t.Errorf("Ready = %+v, want %+v", r, tc.want)
			}
			if ready != (tc.want.status == "True") {
				t.Errorf(".Ready = %v", ready)
			}
			for _, typ := range []string{status.ConditionReconciling, status.ConditionStalled} {
				c := meta.FindStatusCondition(conds, typ)
				switch {
				case typ != tc.want.other && c != nil:
					t.Errorf("%s present: %+v", typ, c)
				case typ == tc.want.other && (c == nil || c.Status != metav1.ConditionTrue || c.Reason != tc.want.otherReason || c.Message != tc.want.message):
					t.Errorf("%s = %+v, want True/%s with Ready's message", typ, c, tc.want.otherReason)
				}
			}
		})
	}
	t.Run("many children are summed up", func(t *testing.T) {
		var states []childState
		for i := range 8 {
			states = append(states, st(fmt.Sprintf("Deployment/d%d", i), health.InProgress, "", "0/1 available"))
		}
		conds, _ := readiness(states, nil, false, 1)
		if msg := conds[0].Message; !strings.HasSuffix(msg, "Deployment/d4 0/1 available; and 3 more") {
			t.Errorf("message = %q", msg)
		}
	})
}

func TestFailureConditions(t *testing.T) {
	for _, tc := range []struct {
		reason   string
		terminal bool
		other    string
	}{{status.ReasonRenderFailed, true, status.ConditionStalled}, {status.ReasonLookupFailed, false, status.ConditionReconciling}} {
		conds := failure(tc.reason, "deployment.yaml:3: boom", tc.terminal, 2)
		if len(conds) != 2 || conds[0].Type != status.ConditionReady || conds[0].Status != metav1.ConditionFalse || conds[0].Reason != tc.reason ||
			conds[1].Type != tc.other || conds[1].Status != metav1.ConditionTrue || conds[1].Reason != tc.reason || conds[1].Message != "deployment.yaml:3: boom" {
			t.Errorf("failure(%s, terminal=%v) = %+v", tc.reason, tc.terminal, conds)
		}
	}
}

func TestApplyOrder(t *testing.T) {
	obj := func(apiVersion, kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName(name)
		return u
	}
	children := []Child{
		{Template: "a-service.yaml", Object: obj("v1", "Service", "s")},
		{Template: "b-crd.yaml", Object: obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "foos.e.io")},
		{Template: "b-crd.yaml", Object: obj("e.io/v1", "Foo", "f")},
		{Template: "deployment.yaml", Object: obj("apps/v1", "Deployment", "d")},
		{Template: "deployment.yaml", Object: obj("v1", "ConfigMap", "d-config")},
		{Template: "migrate-job.yaml", Object: obj("batch/v1", "Job", "m")},
		{Template: "ns.yaml", Object: obj("v1", "Namespace", "n")},
		{Template: "z-cm.yaml", Object: obj("v1", "ConfigMap", "z")},
	}
	label := func(order []int) string {
		var out []string
		for _, i := range order {
			out = append(out, children[i].Object.GetName())
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		deps map[string][]string
		want string
	}{
		{nil, "foos.e.io n s f d d-config m z"},
		{map[string][]string{"deployment.yaml": {"migrate-job.yaml"}}, "foos.e.io n s f m d d-config z"},
		{map[string][]string{"a-service.yaml": {"deployment.yaml"}, "deployment.yaml": {"migrate-job.yaml", "z-cm.yaml"}}, "foos.e.io n f m z d d-config s"},
		// A dependency that rendered nothing this time holds nothing back.
		{map[string][]string{"a-service.yaml": {"optional.yaml"}}, "foos.e.io n f d d-config m s z"},
	} {
		if got := label(applyOrder(children, tc.deps)); got != tc.want {
			t.Errorf("applyOrder(%v) = %q, want %q", tc.deps, got, tc.want)
		}
	}
}

func TestBlocker(t *testing.T) {
	crd := childState{template: "crd.yaml", label: "CustomResourceDefinition/foos.e.io", first: true, live: true,
		health: health.Result{Status: health.InProgress, Message: "Install in progress"}}
	job := st("Job/m", health.Current, "", "completed")
	job.template = "job.yaml"
	waitingJob := childState{template: "job.yaml", label: "Job/m", waiting: true}
	deps := []string{"job.yaml"}
	if w := blocker("deployment.yaml", deps, []childState{job}); w != nil {
		t.Errorf("blocked by a Current Job: %v", w)
	}
	if w := blocker("deployment.yaml", deps, []childState{crd, job}); w == nil ||
		w.String() != "deployment.yaml waits for crd.yaml (CustomResourceDefinition/foos.e.io: InProgress: Install in progress)" {
		t.Errorf("CRD not waited for: %v", w)
	}
	if w := blocker("deployment.yaml", deps, []childState{waitingJob}); w == nil || !strings.Contains(w.String(), "Job/m: not applied yet, it waits too") {
		t.Errorf("a waiting dependency: %v", w)
	}
}

// TestDependsOnReconcile runs the reconciler over a fake API server: the
// Deployment is not applied until the Job completed, the parent says what
// waits for what, the Job's completion (a status-only change) applies the
// Deployment, health changes are written, and nothing is written at rest.
func TestDependsOnReconcile(t *testing.T) {
	set, err := render.Parse(map[string]string{
		"migrate-job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Name }}-migrate\nspec:\n  template: {spec: {restartPolicy: Never, containers: [{name: m, image: busybox}]}}\n",
		"deployment.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Name }}\nspec:\n  replicas: 2\n",
		"status.yaml":      "ready: {{ .Ready }}\njob: {{ dig \"Job\" (printf \"%s-migrate\" .Name) \"health\" \"status\" \"none\" .Children | quote }}\njobByGroup: {{ dig \"Job.batch\" (printf \"%s-migrate\" .Name) \"health\" \"status\" \"none\" .Children | quote }}\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	k := &catalog.Kind{Name: "app", GVK: schema.GroupVersionKind{Group: "e.io", Version: "v1", Kind: "App"}, Templates: set,
		Spec: catalog.Spec{DependsOn: map[string][]string{"deployment.yaml": {"migrate-job.yaml"}}}}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}, {Group: "batch", Version: "v1"}, {Group: "e.io", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, meta.RESTScopeNamespace)
	mapper.Add(k.GVK, meta.RESTScopeNamespace)
	cache := &liveCache{objs: map[apply.Key]*unstructured.Unstructured{}}
	parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "App",
		"metadata": map[string]any{"name": "web", "namespace": "ns", "uid": "u1", "generation": int64(1), "resourceVersion": "1"}}}
	rv := 1
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	dyn.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchAction)
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(p.GetPatch()); err != nil {
			return true, nil, err
		}
		rv++
		if p.GetSubresource() == "status" {
			parent.Object["status"] = u.Object["status"]
			parent.SetResourceVersion(fmt.Sprint(rv))
			return true, parent.DeepCopy(), nil
		}
		u.SetResourceVersion(fmt.Sprint(rv))
		u.SetGeneration(1)
		u.SetUID(types.UID("uid-" + u.GetName()))
		gr := p.GetResource().GroupResource()
		cache.objs[apply.Key{GR: gr, Namespace: u.GetNamespace(), Name: u.GetName()}] = u
		return true, u.DeepCopy(), nil
	})
	stats := &Stats{}
	r := &Reconciler{Kind: k, Client: kube.NewForClients(kube.Clients{Dynamic: dyn, Mapper: mapper}, "op"),
		Applier: apply.NewApplier(cache, nil), Lookups: noLookups{}, Inventory: &memInventory{}, Recorder: &record.FakeRecorder{},
		Manager: "op", Stats: stats, Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }}
	jobKey := apply.Key{GR: schema.GroupResource{Group: "batch", Resource: "jobs"}, Namespace: "ns", Name: "web-migrate"}
	depKey := apply.Key{GR: schema.GroupResource{Group: "apps", Resource: "deployments"}, Namespace: "ns", Name: "web"}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(t.Context(), parent.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	cond := func(typ string) *metav1.Condition { return status.Find(statusOf(parent), typ) }
	setStatus := func(key apply.Key, st map[string]any) {
		o := cache.objs[key]
		o.Object["status"] = st
		rv++
		o.SetResourceVersion(fmt.Sprint(rv))
	}

	reconcile()
	if _, ok := cache.objs[jobKey]; !ok {
		t.Fatal("the Job was not applied")
	}
	if _, ok := cache.objs[depKey]; ok {
		t.Fatal("the Deployment was applied before the Job completed")
	}
	if c := cond(status.ConditionReconciling); c == nil || c.Reason != status.ReasonWaitingForDependencies ||
		!strings.Contains(c.Message, "deployment.yaml waits for migrate-job.yaml (Job/web-migrate: InProgress: not started)") {
		t.Fatalf("Reconciling = %+v", c)
	}
	if c := cond(status.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("Ready = %+v", c)
	}
	if s := statusOf(parent); s["ready"] != false || s["job"] != "InProgress" || s["jobByGroup"] != "InProgress" {
		t.Fatalf("status.yaml saw %v", s)
	}

	// The Job runs: still waiting, judged again.
	setStatus(jobKey, map[string]any{"startTime": "2026-01-01T00:00:00Z", "active": int64(1)})
	reconcile()
	if _, ok := cache.objs[depKey]; ok {
		t.Fatal("the Deployment was applied while the Job runs")
	}
	if c := cond(status.ConditionReconciling); c == nil || !strings.Contains(c.Message, "running: 0 succeeded, 1 active") {
		t.Fatalf("Reconciling = %+v", c)
	}

	// The Job completes: the Deployment is applied.
	setStatus(jobKey, map[string]any{"succeeded": int64(1), "conditions": []any{map[string]any{"type": "Complete", "status": "True"}}})
	reconcile()
	if _, ok := cache.objs[depKey]; !ok {
		t.Fatal("the Deployment was not applied after the Job completed")
	}
	if c := cond(status.ConditionReconciling); c == nil || c.Reason != status.ReasonProgressing || c.Message != "Deployment/web 0/2 available" {
		t.Fatalf("Reconciling = %+v", c)
	}

	// The Deployment becomes available: Ready.
	setStatus(depKey, map[string]any{"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": int64(2), "readyReplicas": int64(2),
		"availableReplicas": int64(2), "conditions": []any{map[string]any{"type": "Available", "status": "True"},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}}})
	reconcile()
	if c := cond(status.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.Message != "all 2 children are ready" {
		t.Fatalf("Ready = %+v", c)
	}
	if cond(status.ConditionReconciling) != nil || cond(status.ConditionStalled) != nil {
		t.Fatalf("conditions = %v", statusOf(parent)["conditions"])
	}
	if s := statusOf(parent); s["ready"] != true {
		t.Fatalf("status = %v", s)
	}

	// At rest: nothing is written, even when a child's status changes in
	// a way that changes nothing the parent reports.
	writes := len(dyn.Actions())
	reconcile()
	setStatus(depKey, cache.objs[depKey].Object["status"].(map[string]any))
	reconcile()
	if n := len(dyn.Actions()) - writes; n != 0 {
		t.Fatalf("%d requests at rest: %v", n, dyn.Actions()[writes:])
	}
}

// fakeCluster is a fake API server for the reconciler: applies land in
// cache (as the children watch would see them), the parent's status in
// parent.
type fakeCluster struct {
	t      *testing.T
	cache  *liveCache
	parent *unstructured.Unstructured
	mapper *meta.DefaultRESTMapper
	dyn    *dynamicfake.FakeDynamicClient
	rv     int
}

func newFakeCluster(t *testing.T, parent *unstructured.Unstructured, gvs []schema.GroupVersion) *fakeCluster {
	f := &fakeCluster{t: t, cache: &liveCache{objs: map[apply.Key]*unstructured.Unstructured{}}, parent: parent, rv: 1,
		mapper: meta.NewDefaultRESTMapper(gvs), dyn: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}
	f.dyn.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchAction)
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(p.GetPatch()); err != nil {
			return true, nil, err
		}
		f.rv++
		if p.GetSubresource() == "status" {
			f.parent.Object["status"] = u.Object["status"]
			f.parent.SetResourceVersion(fmt.Sprint(f.rv))
			return true, f.parent.DeepCopy(), nil
		}
		u.SetResourceVersion(fmt.Sprint(f.rv))
		u.SetGeneration(1)
		u.SetUID(types.UID("uid-" + u.GetName()))
		f.cache.objs[apply.Key{GR: p.GetResource().GroupResource(), Namespace: u.GetNamespace(), Name: u.GetName()}] = u
		return true, u.DeepCopy(), nil
	})
	return f
}

func (f *fakeCluster) setStatus(key apply.Key, st map[string]any) {
	o := f.cache.objs[key]
	o.Object["status"] = st
	f.rv++
	o.SetResourceVersion(fmt.Sprint(f.rv))
}

// TestCRDChildFirst: a folder that renders a CRD and an object of its kind
// applies the CRD first; the object waits for it to be established, then
// for discovery to serve its kind, then is applied.
func TestCRDChildFirst(t *testing.T) {
	set, err := render.Parse(map[string]string{
		"a-foo.yaml": "apiVersion: x.io/v1\nkind: Foo\nmetadata:\n  name: {{ .Name }}\n",
		"definition.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.x.io
spec:
  group: x.io
  scope: Cluster
  names: {plural: foos, kind: Foo}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`,
	})
	if err != nil {
		t.Fatal(err)
	}
	k := &catalog.Kind{Name: "app", GVK: schema.GroupVersionKind{Group: "e.io", Version: "v1", Kind: "App"}, Templates: set,
		Spec: catalog.Spec{AllowClusterScoped: true}}
	parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "App",
		"metadata": map[string]any{"name": "one", "uid": "u1", "generation": int64(1), "resourceVersion": "1"}}}
	f := newFakeCluster(t, parent, []schema.GroupVersion{{Group: "apiextensions.k8s.io", Version: "v1"}, {Group: "e.io", Version: "v1"}, {Group: "x.io", Version: "v1"}})
	f.mapper.Add(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, meta.RESTScopeRoot)
	f.mapper.Add(k.GVK, meta.RESTScopeRoot)
	r := &Reconciler{Kind: k, Client: kube.NewForClients(kube.Clients{Dynamic: f.dyn, Mapper: f.mapper}, "op"),
		Applier: apply.NewApplier(f.cache, nil), Lookups: noLookups{}, Inventory: &memInventory{}, Recorder: &record.FakeRecorder{},
		Manager: "op", Stats: &Stats{}}
	crdKey := apply.Key{GR: schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, Name: "foos.x.io"}
	fooKey := apply.Key{GR: schema.GroupResource{Group: "x.io", Resource: "foos"}, Name: "one"}
	reconcile := func() Result {
		t.Helper()
		res, err := r.Reconcile(t.Context(), parent.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	reconciling := func() string {
		c := status.Find(statusOf(parent), status.ConditionReconciling)
		if c == nil {
			return ""
		}
		return c.Message
	}

	reconcile()
	if _, ok := f.cache.objs[crdKey]; !ok {
		t.Fatal("the CRD was not applied")
	}
	if _, ok := f.cache.objs[fooKey]; ok {
		t.Fatal("the Foo was applied before its CRD was established")
	}
	if msg := reconciling(); msg != "CustomResourceDefinition/foos.x.io Install in progress; a-foo.yaml waits for definition.yaml (CustomResourceDefinition/foos.x.io: InProgress: Install in progress)" {
		t.Fatalf("Reconciling: %q", msg)
	}

	// Established, not served yet: the Foo waits, and the parent looks again.
	f.setStatus(crdKey, map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": "True"}}})
	if res := reconcile(); res.RequeueAfter != crdServeRetry {
		t.Errorf("requeue after %v, want %v", res.RequeueAfter, crdServeRetry)
	}
	if msg := reconciling(); msg != "a-foo.yaml waits: Foo/one: its CustomResourceDefinition is not served yet" {
		t.Fatalf("Reconciling: %q", msg)
	}

	f.mapper.Add(schema.GroupVersionKind{Group: "x.io", Version: "v1", Kind: "Foo"}, meta.RESTScopeRoot)
	reconcile()
	if _, ok := f.cache.objs[fooKey]; !ok {
		t.Fatal("the Foo was not applied once its kind was served")
	}
	if c := status.Find(statusOf(parent), status.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %+v", c)
	}
}
