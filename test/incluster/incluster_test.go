package incluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/internal/testsupport/metricstest"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

var (
	widgets  = cluster.GVR("incluster.tmplop.io", "v1", "widgets")
	limiteds = cluster.GVR("incluster.tmplop.io", "v1", "limiteds")
)

// TestInCluster runs the operator as deploy/ does: two replicas with leader
// election, kind folders from ConfigMaps, authenticated as deploy/'s
// ServiceAccount. The subtests share the replicas and run in order.
func TestInCluster(t *testing.T) {
	applyTestRBAC(t)
	replicas[0] = startReplica(t)
	replicas[1] = startReplica(t)

	t.Run("deploy is accepted by the API server", testDeployDryRun)
	t.Run("one replica leads while the other stands by warm", testLeaderOnly)
	t.Run("every replica serves the conversion webhook, which the API server reaches through the Service", testWebhook)
	t.Run("every example reconciles as the ServiceAccount", testExamples)
	t.Run("requests outside the generated role are denied", testDenied)
	t.Run("a kind is added then changed then removed through its ConfigMap", testConfigMapKind)
	t.Run("a kind impersonates its ServiceAccount", testPerKindIdentity)
	t.Run("a kind without one runs as the account that agrees to serve it", testOwnAccount)
	t.Run("a kind no account agrees to serve runs as the default account, which may do nothing", testDefaultAccountHoldsNothing)
	t.Run("a second folder for a served kind is refused", testKindConflict)
	t.Run("no folder writes into the operator's namespace", testNoFolderWritesFolders)
	t.Run("an account serves only the kinds it agrees to", testAgreement)
	t.Run("metrics and probes", testMetrics)
	t.Run("the standby converges a change when the leader is killed", testFailover)
	t.Run("a leader stopped by SIGTERM releases its lease", testRelease)
	t.Run("shards assign and hand over and take over objects as the ServiceAccount", testSharding)
}

// applyTestRBAC applies `operator rbac` of testdata's folders, for deploy/'s
// --default-service-account, with two rights taken away: Deployments from
// the Limited kind's own account, ResourceQuotas from the role of the
// account generated for Plain. What a folder may do is what its account
// may, whatever its templates render.
func applyTestRBAC(t *testing.T) {
	t.Helper()
	out, err := exec.Command(bin, "rbac", "--templates", "testdata/templates", "--crds", "testdata/crds",
		"--name", "incluster-test", "--namespace", ns, "--service-account", serviceAccount,
		"--default-service-account", defaultAccount).Output()
	if err != nil {
		t.Fatalf("operator rbac: %v: %s", err, stderrOf(err))
	}
	takeAway := map[string]string{"incluster-test-kind-limited": "deployments", "incluster-test-kind-plain": "resourcequotas"}
	var docs []string
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || u.Object == nil {
			continue
		}
		if resource, ok := takeAway[u.GetName()]; ok && u.GetKind() == "ClusterRole" {
			rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
			// Only the resource: a rule lists the resources of a group
			// that take the same verbs.
			kept := rules[:0]
			for _, r := range rules {
				res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
				if i := slices.Index(res, resource); i >= 0 {
					delete(takeAway, u.GetName())
					if res = slices.Delete(res, i, i+1); len(res) == 0 {
						continue
					}
					_ = unstructured.SetNestedStringSlice(r.(map[string]any), res, "resources")
				}
				kept = append(kept, r)
			}
			_ = unstructured.SetNestedSlice(u.Object, kept, "rules")
			b, _ := yaml.Marshal(u.Object)
			doc = string(b)
		}
		docs = append(docs, doc)
	}
	if len(takeAway) > 0 {
		t.Fatalf("operator rbac gave these roles no rule to take away: %v\n%s", takeAway, out)
	}
	path := filepath.Join(t.TempDir(), "rbac.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := env.Kubectl(t.Context(), "apply", "--server-side", "-f", path); err != nil {
		t.Fatalf("apply test RBAC: %v: %s", err, out)
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

func testDeployDryRun(t *testing.T) {
	out, err := env.Kubectl(t.Context(), "apply", "--dry-run=server", "-k", filepath.Join(env.RepoRoot(), "deploy"))
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server -k deploy/: %v\n%s", err, out)
	}
	t.Logf("kubectl apply --dry-run=server -k deploy/:\n%s", out)

	// make deploy-sharded: the same objects, but three shards.
	sharded := filepath.Join(env.RepoRoot(), "hack", "deploy-sharded")
	if out, err := env.Kubectl(t.Context(), "apply", "--dry-run=server", "-k", sharded); err != nil {
		t.Fatalf("kubectl apply --dry-run=server -k hack/deploy-sharded: %v\n%s", err, out)
	}
	out, err = env.Kubectl(t.Context(), "kustomize", sharded)
	if err != nil {
		t.Fatalf("kubectl kustomize hack/deploy-sharded: %v\n%s", err, out)
	}
	var d appsv1.Deployment
	for _, doc := range strings.Split(out, "\n---\n") {
		if strings.Contains(doc, "kind: Deployment") {
			if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
				t.Fatal(err)
			}
		}
	}
	args := d.Spec.Template.Spec.Containers[0].Args
	if *d.Spec.Replicas != 3 || !slices.Contains(args, "--sharding") || slices.Contains(args, "--leader-elect") {
		t.Errorf("hack/deploy-sharded: %d replicas, args %q; want 3 replicas with --sharding and no --leader-elect", *d.Spec.Replicas, args)
	}
	testDeployCertManager(t)
}

// testDeployCertManager builds deploy/ with its cert-manager component
// (hack/deploy-cert-manager) and has the API server dry-run every object
// but cert-manager's own (this control plane has no cert-manager CRDs):
// the Deployment it patches must still be valid, and mount the serving
// Certificate's Secret where --webhook-cert-dir points.
func testDeployCertManager(t *testing.T) {
	dir := filepath.Join(env.RepoRoot(), "hack", "deploy-cert-manager")
	out, err := env.Kubectl(t.Context(), "kustomize", dir)
	if err != nil {
		t.Fatalf("kubectl kustomize hack/deploy-cert-manager: %v\n%s", err, out)
	}
	var d appsv1.Deployment
	var kept []string
	secretOf := map[string]string{} // Certificate -> its Secret
	for _, doc := range strings.Split(out, "\n---\n") {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		switch {
		case u.GetAPIVersion() == "cert-manager.io/v1":
			if u.GetKind() == "Certificate" {
				secretOf[u.GetName()], _, _ = unstructured.NestedString(u.Object, "spec", "secretName")
			}
			continue
		case u.GetKind() == "Deployment":
			if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
				t.Fatal(err)
			}
		}
		kept = append(kept, doc)
	}
	path := filepath.Join(t.TempDir(), "deploy-cert-manager.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := env.Kubectl(t.Context(), "apply", "--server-side", "--dry-run=server", "-f", path); err != nil {
		t.Fatalf("kubectl apply --dry-run=server of hack/deploy-cert-manager without cert-manager's objects: %v\n%s", err, out)
	}
	pod := d.Spec.Template.Spec
	var certDir string
	for _, a := range pod.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--webhook-cert-dir="); ok {
			certDir = v
		}
	}
	var mounted string
	for _, m := range pod.Containers[0].VolumeMounts {
		if m.MountPath == certDir {
			for _, v := range pod.Volumes {
				if v.Name == m.Name && v.Secret != nil {
					mounted = v.Secret.SecretName
				}
			}
		}
	}
	if certDir == "" || mounted == "" || mounted != secretOf["operator-webhook"] {
		t.Errorf("hack/deploy-cert-manager: --webhook-cert-dir=%q mounts Secret %q; Certificate operator-webhook writes %q", certDir, mounted, secretOf["operator-webhook"])
	}
}

// leader returns the replica that leads, waiting for the election.
func leader(t *testing.T) (lead, standby *replica) {
	t.Helper()
	cluster.Eventually(t, 30*time.Second, "a replica is elected", func(context.Context) (bool, error) {
		for i, r := range replicas {
			if r != nil && r.Alive() && strings.Contains(r.Output(), "Elected leader") {
				lead, standby = r, replicas[1-i]
				return true, nil
			}
		}
		return false, nil
	})
	return lead, standby
}

func testLeaderOnly(t *testing.T) {
	lead, standby := leader(t)
	if err := standby.WaitForOutput(t.Context(), "Standing by"); err != nil {
		t.Fatalf("the standby never said it stands by: %v", err)
	}
	// Warm: the standby has listed every kind before it leads.
	cluster.Eventually(t, 30*time.Second, "the standby's caches are synced", func(ctx context.Context) (bool, error) {
		code, body, err := harness.HTTPGet(ctx, "http://"+standby.health+"/readyz")
		if err != nil {
			return false, err
		}
		if code != 200 {
			return false, errorf("readyz %d: %s", code, body)
		}
		return true, nil
	})
	if strings.Contains(standby.Output(), "Elected leader") {
		t.Errorf("both replicas say they lead")
	}
	t.Logf("leader pid %d, standby pid %d", lead.PID(), standby.PID())
}

func testExamples(t *testing.T) {
	lead, standby := leader(t)
	testNS := env.Namespace(t)
	if out, err := env.Kubectl(t.Context(), "apply", "--server-side", "-n", testNS, "-f", filepath.Join(env.RepoRoot(), "examples")); err != nil {
		t.Fatalf("apply examples: %v: %s", err, out)
	}
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"},
		{Group: "test.jiaozi.com", Version: "v1alpha1", Resource: "helloworlds"},
		{Group: "app.example.com", Version: "v1", Resource: "appservices"},
		{Group: "cnat.programming-kubernetes.info", Version: "v1alpha1", Resource: "ats"},
		{Group: "apps.zhongmingmao.io", Version: "v1beta1", Resource: "mydaemonsets"},
		{Group: "demo.tmplop.io", Version: "v1alpha1", Resource: "migratedapps"},
		// A Helm chart, delivered packaged in its ConfigMap.
		{Group: "charts.tmplop.io", Version: "v1alpha1", Resource: "webapps"},
	} {
		cluster.Eventually(t, 90*time.Second, gvr.Resource+" reconciled", func(ctx context.Context) (bool, error) {
			list, err := env.Resource(gvr, testNS).List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) == 0 {
				return false, err
			}
			for _, o := range list.Items {
				c := cluster.Condition(&o, "Reconciled")
				if c.Status != metav1.ConditionTrue {
					return false, errorf("%s %s: Reconciled %+v", gvr.Resource, o.GetName(), c)
				}
			}
			if gvr.Resource == "migratedapps" || gvr.Resource == "webapps" {
				// Its Deployment waits for the migration Job: Ready
				// says when both are done.
				for _, o := range list.Items {
					if c := cluster.Condition(&o, "Ready"); c.Status != metav1.ConditionTrue {
						return false, errorf("%s %s: Ready %+v", gvr.Resource, o.GetName(), c)
					}
				}
			}
			return true, nil
		})
	}
	// Only the leader wrote: the standby reconciled nothing.
	if n := metricSum(t, standby, "operator_reconcile_total"); n != 0 {
		t.Errorf("the standby reconciled %v times; only the leader may write", n)
	}
	if n := metricSum(t, lead, "operator_reconcile_total"); n == 0 {
		t.Errorf("the leader's operator_reconcile_total is 0 after reconciling the examples")
	}
}

func testDenied(t *testing.T) {
	sa := kubernetes.NewForConfigOrDie(saConfig)
	_, err := sa.CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("listing Secrets as the operator's ServiceAccount: got %v, want 403 Forbidden", err)
	}
	t.Logf("list secrets as the ServiceAccount: %v", err)
	// The conversion webhook's Secret, by name, is the one it may read:
	// not another of its namespace.
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "not-the-webhooks", Namespace: ns}, StringData: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), other, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Secrets(ns).Delete(context.Background(), other.Name, metav1.DeleteOptions{}) })
	if _, err := sa.CoreV1().Secrets(ns).Get(t.Context(), other.Name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading Secret %s/%s as the operator's ServiceAccount: got %v, want 403 Forbidden", ns, other.Name, err)
	}
	if _, err := sa.CoreV1().Secrets(ns).Get(t.Context(), webhookSecret, metav1.GetOptions{}); err != nil {
		t.Errorf("reading the webhook's Secret %s/%s as the operator's ServiceAccount: %v", ns, webhookSecret, err)
	}
	// What `kubectl auth can-i --list` shows of it (deploy/rbac.yaml,
	// operator rbac --webhook): that name, and create, which reads nothing.
	webhookRules := []string{
		"secrets [] [" + webhookSecret + "] [get list update watch]",
		"secrets [] [] [create]",
	}
	_, err = sa.AppsV1().DaemonSets("default").Create(t.Context(), &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{DryRun: []string{"All"}})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("creating a DaemonSet (no template renders one): got %v, want 403 Forbidden", err)
	}
	for _, namespace := range []string{ns, "default"} {
		out, err := kubectlAs(t.Context(), "auth", "can-i", "--list", "-n", namespace)
		if err != nil {
			t.Fatalf("kubectl auth can-i --list: %v\n%s", err, out)
		}
		for _, line := range strings.Split(out, "\n")[1:] {
			f := strings.Fields(line)
			if len(f) == 0 || strings.HasPrefix(f[0], "[") {
				continue // non-resource URLs (discovery, granted to every user)
			}
			if namespace == ns && slices.Contains(webhookRules, strings.Join(f, " ")) {
				continue
			}
			if strings.HasPrefix(f[0], "secrets") || f[0] == "*" || f[0] == "*.*" || strings.Contains(line, "[*]") {
				t.Errorf("kubectl auth can-i --list -n %s as the ServiceAccount grants %q", namespace, line)
			}
		}
		t.Logf("kubectl auth can-i --list -n %s as the ServiceAccount:\n%s", namespace, out)
	}
}

func testConfigMapKind(t *testing.T) {
	ctx := t.Context()
	testNS := env.Namespace(t)
	cms := cs.CoreV1().ConfigMaps(ns)
	folder := folderConfigMap(t, "testdata/templates/widget", "widget")
	if _, err := cms.Create(ctx, folder, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), "widget", metav1.DeleteOptions{}) })
	waitEvent(t, "widget", "KindStarted")

	env.CreateSpec(t, widgets, "Widget", testNS, "w1", map[string]any{"color": "blue"})
	waitChildData(t, testNS, "w1-widget", "color", "blue")

	// Changed: the kind restarts with the new template.
	folder.Data["configmap.yaml"] += "  shape: round\n"
	if _, err := cms.Update(ctx, folder, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitChildData(t, testNS, "w1-widget", "shape", "round")

	// Broken: an Event says why, and the last good version goes on.
	folder.Data["configmap.yaml"] = "{{ .Name "
	if _, err := cms.Update(ctx, folder, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, "widget", "KindFolderInvalid")
	env.CreateSpec(t, widgets, "Widget", testNS, "w2", map[string]any{"color": "green"})
	waitChildData(t, testNS, "w2-widget", "shape", "round")

	// Removed: the kind stops; its objects and children stay as they are.
	if err := cms.Delete(ctx, "widget", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lead, _ := leader(t)
	cluster.Eventually(t, 10*time.Second, "the leader stops the kind", func(context.Context) (bool, error) {
		// This kind's: an earlier subtest's kind stopped too.
		return strings.Contains(lead.Output(), `Kind folder removed: stopping the kind" kind="Widget.incluster.tmplop.io"`), nil
	})
	env.Patch(t, widgets, testNS, "w1", `{"spec":{"color":"red"}}`)
	time.Sleep(3 * time.Second)
	for name, color := range map[string]string{"w1-widget": "blue", "w2-widget": "green"} {
		cm, err := cs.CoreV1().ConfigMaps(testNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("child %s after its kind stopped: %v", name, err)
		}
		if cm.Data["color"] != color {
			t.Errorf("child %s color = %q after its kind stopped, want %q unchanged", name, cm.Data["color"], color)
		}
	}
}

func testPerKindIdentity(t *testing.T) {
	ctx := t.Context()
	testNS := env.Namespace(t)
	cms := cs.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, folderConfigMap(t, "testdata/templates/limited", "limited"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), "limited", metav1.DeleteOptions{}) })
	env.CreateSpec(t, limiteds, "Limited", testNS, "l1", map[string]any{})
	waitChildData(t, testNS, "l1-config", "owner", "l1")
	o := env.WaitCondition(t, limiteds, testNS, "l1", "Reconciled", "False", "ApplyFailed", "forbidden", "system:serviceaccount:"+ns+":limited-kind")
	t.Logf("Reconciled=False reason=ApplyFailed message=%s", cluster.Condition(o, "Reconciled").Message)
	if _, err := cs.AppsV1().Deployments(testNS).Get(ctx, "l1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment l1: got %v, want NotFound: its kind's account may not create it", err)
	}
}

func testMetrics(t *testing.T) {
	lead, _ := leader(t)
	url := "https://" + lead.metrics + "/metrics"
	// Who may scrape: the reviews run as deploy/'s account, so a 200 here
	// also shows that its generated role may make them.
	nobody, err := accountToken(t.Context(), env, "metrics-nobody", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		who, token string
		want       int
	}{{"anonymous", "", 401}, {"an account without operator-metrics-reader", nobody, 403}} {
		code, body, err := harness.HTTPSGet(t.Context(), url, c.token)
		if err != nil || code != c.want {
			t.Errorf("GET /metrics as %s: %d %v %s, want %d", c.who, code, err, body, c.want)
		}
		t.Logf("GET /metrics as %s: %d", c.who, code)
	}
	code, body, err := harness.HTTPSGet(t.Context(), url, scraperToken)
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics as the reader: %d %v", code, err)
	}
	for _, want := range []string{
		`operator_reconcile_total{kind="Memcached.cache.example.com"`,
		`workqueue_adds_total{name="Memcached.cache.example.com"}`,
		`workqueue_depth{name="Memcached.cache.example.com"}`,
		`operator_reconcile_time_seconds_bucket{kind="Memcached.cache.example.com"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	if code, _, err := harness.HTTPGet(t.Context(), "http://"+lead.health+"/healthz"); err != nil || code != 200 {
		t.Errorf("GET /healthz: %d %v", code, err)
	}

	// A replica whose kind is not served yet (its CRD is missing) is not
	// ready; it is once the CRD is installed.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "late"), 0o755); err != nil {
		t.Fatal(err)
	}
	const group = "late.incluster.tmplop.io"
	writeFile(t, filepath.Join(dir, "late", "kind.yaml"), "apiVersion: "+group+"/v1\nkind: Late\n")
	writeFile(t, filepath.Join(dir, "late", "configmap.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n")
	ports, err := cluster.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	// As admin, in standby (a second lease name): it must not write.
	startLate(t, dir, ports[0])
	cluster.Eventually(t, 20*time.Second, "readyz 503 while the kind waits for its CRD", func(ctx context.Context) (bool, error) {
		code, body, err := harness.HTTPGet(ctx, "http://"+ports[0]+"/readyz")
		if err != nil {
			return false, err
		}
		t.Logf("readyz before the CRD: %d %s", code, strings.TrimSpace(body))
		return code == 503, nil
	})
	crd := strings.NewReplacer("GROUP", group).Replace(lateCRD)
	path := filepath.Join(dir, "crd.yaml")
	writeFile(t, path, crd)
	if out, err := env.Kubectl(t.Context(), "apply", "--server-side", "-f", path); err != nil {
		t.Fatalf("apply CRD: %v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = env.Kubectl(context.Background(), "delete", "-f", path) })
	cluster.Eventually(t, 60*time.Second, "readyz 200 once the CRD is served", func(ctx context.Context) (bool, error) {
		code, body, err := harness.HTTPGet(ctx, "http://"+ports[0]+"/readyz")
		if err != nil {
			return false, err
		}
		if code != 200 {
			return false, errorf("readyz %d: %s", code, body)
		}
		return true, nil
	})
}

const lateCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: lates.GROUP
spec:
  group: GROUP
  scope: Namespaced
  names: {plural: lates, singular: late, kind: Late, listKind: LateList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// startLate runs a third operator on dir, as the admin (its kind is not in
// the generated role), in a namespace of its own where nothing exists.
func startLate(t *testing.T, dir, health string) *replica {
	t.Helper()
	empty := env.Namespace(t)
	addrs, err := cluster.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	metrics := addrs[0]
	r := &replica{metrics: metrics, health: health}
	r.Operator = harness.StartOperator(t, bin, "run", "--kubeconfig", env.Kubeconfig, "--templates", dir,
		"--namespace", empty, "--state-namespace", empty, "--field-manager", "operator-late",
		"--metrics-bind-address", metrics, "--health-probe-bind-address", health)
	return r
}

func testFailover(t *testing.T) {
	testNS := env.Namespace(t)
	lead, standby := leader(t)
	memcacheds := cluster.GVR("cache.example.com", "v1alpha1", "memcacheds")
	env.CreateSpec(t, memcacheds, "Memcached", testNS, "m", map[string]any{"size": int64(1)})
	waitReplicas(t, testNS, "m", 1)

	if err := lead.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	env.Patch(t, memcacheds, testNS, "m", `{"spec":{"size":2}}`)
	waitReplicas(t, testNS, "m", 2)
	failover := time.Since(killed)
	if !strings.Contains(standby.Output(), "Elected leader") {
		t.Fatalf("the change converged, but the standby never said it leads")
	}
	t.Logf("failover: the leader was SIGKILLed; the standby converged a pending change %.1fs later (lease duration %s)",
		failover.Seconds(), leaseDuration)
	if failover > leaseDuration+10*time.Second {
		t.Errorf("failover took %s, want within the lease duration (%s) plus 10s", failover, leaseDuration)
	}
}

// testRelease: a leader that stops cleanly (a rolling update) releases
// the Lease after its drain, so the next one leads at once instead of a
// lease duration later.
func testRelease(t *testing.T) {
	lead, _ := leader(t)
	next := startReplica(t)
	if err := next.WaitForOutput(t.Context(), "Standing by"); err != nil {
		t.Fatal(err)
	}
	for i, r := range replicas {
		if r == lead {
			replicas[1-i] = next
		}
	}
	if err := lead.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	code, exited, err := lead.Wait(30 * time.Second)
	if err != nil || code != 0 {
		t.Fatalf("the leader's exit on SIGTERM: code %d, %v", code, err)
	}
	if err := next.WaitForOutput(t.Context(), "Elected leader"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(stopped)
	t.Logf("SIGTERM to the leader: it exited after %.1fs; the standby led %.1fs after the signal (lease duration %s)",
		exited.Seconds(), took.Seconds(), leaseDuration)
	if took >= leaseDuration {
		t.Errorf("the standby led %s after the leader's SIGTERM: the lease was not released (it expired)", took)
	}
}

func waitReplicas(t *testing.T, namespace, name string, n int32) {
	t.Helper()
	cluster.Eventually(t, 60*time.Second, "Deployment "+name+" has the replicas asked", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Spec.Replicas != nil && *d.Spec.Replicas == n, nil
	})
}

func waitChildData(t *testing.T, namespace, name, key, value string) {
	t.Helper()
	cluster.Eventually(t, 30*time.Second, "ConfigMap "+name+" has "+key+"="+value, func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if cm.Data[key] != value {
			return false, errorf("data %v", cm.Data)
		}
		return true, nil
	})
}

// waitEvent waits for an Event with reason on the folder ConfigMap name.
func waitEvent(t *testing.T, name, reason string) (message string) {
	t.Helper()
	cluster.Eventually(t, 30*time.Second, "Event "+reason+" on ConfigMap "+name, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=ConfigMap,involvedObject.name=" + name})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == reason {
				t.Logf("Event on ConfigMap %s: %s %s: %s", name, e.Type, e.Reason, e.Message)
				message = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	return message
}

// metricSum is the sum of the samples of the metric name on r's /metrics.
func metricSum(t *testing.T, r *replica, name string) float64 {
	t.Helper()
	code, body, err := harness.HTTPSGet(t.Context(), "https://"+r.metrics+"/metrics", scraperToken)
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	mfs, err := metricstest.Parse(body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return metricstest.Total(mfs[name], nil)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
