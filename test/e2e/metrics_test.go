package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tmplop/operator/engine/controller"
	"github.com/tmplop/operator/engine/metrics"
	"github.com/tmplop/operator/internal/testsupport/metricstest"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// serveMetrics serves m's metrics and probes on loopback ports for the
// test, as `operator run` does by default: /metrics over HTTPS (a
// self-signed certificate) to the tokens the API server says may get it,
// the probes in plain HTTP on a port of their own. The reviews are made
// as the test's admin.
func serveMetrics(t *testing.T, m *controller.Manager) *metrics.Server {
	t.Helper()
	reviews, err := metrics.NewReviews(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return serveSecureMetrics(t, m, reviews)
}

func serveSecureMetrics(t *testing.T, m *controller.Manager, reviews metrics.Reviews) *metrics.Server {
	t.Helper()
	s, err := metrics.Serve(klog.NewContext(t.Context(), klog.Background()), metrics.ServeOptions{
		MetricsBindAddress: "127.0.0.1:0", HealthProbeBindAddress: "127.0.0.1:0",
		Gatherer: metrics.NewRegistry(m), Ready: m.Ready,
		SecureMetrics: true, Guard: metrics.NewGuard(reviews, metrics.GuardOptions{}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// getMetrics GETs /metrics of s over HTTPS with a bearer token ("": none).
func getMetrics(ctx context.Context, s *metrics.Server, token string) (int, string, error) {
	return harness.HTTPSGet(ctx, "https://"+s.MetricsAddr.String()+"/metrics", token)
}

// scrape returns the families of /metrics, parsed, read with the admin's
// token (system:masters may get any URL).
func scrape(ctx context.Context, s *metrics.Server) (map[string]*dto.MetricFamily, error) {
	code, body, err := getMetrics(ctx, s, env.Config.BearerToken)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d: %s", code, body)
	}
	return metricstest.Parse(body)
}

// TestMetrics: the package's Manager, serving templates/, exposes per-kind
// and workqueue series for a kind once one of its objects is reconciled,
// and is ready.
func TestMetrics(t *testing.T) {
	s := serveMetrics(t, mgr)
	ns := env.Namespace(t)
	env.Create(t, memcachedGVR, ns, memcached("counted", 1))
	env.Create(t, memcachedGVR, ns, memcached("nosize", -1)) // fails: RenderFailed

	kind := map[string]string{"kind": memcachedGK.String()}
	with := func(extra ...string) map[string]string {
		l := map[string]string{"kind": memcachedGK.String()}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	checks := []struct {
		metric string
		labels map[string]string
	}{
		{"operator_reconcile_total", kind},
		{"operator_reconcile_total", with("result", "success")},
		{"operator_reconcile_total", with("result", "error")},
		{"operator_reconcile_errors_total", with("reason", "RenderFailed")},
		{"operator_reconcile_time_seconds", kind},
		{"operator_render_duration_seconds", with("phase", "children")},
		{"operator_child_applies_total", with("result", "written")},
		{"operator_status_writes_total", kind},
		{"operator_objects", kind},
		{"operator_objects", with("ready", "True")}, // counted, once its Pod runs
		{"workqueue_adds_total", map[string]string{"name": memcachedGK.String()}},
		{"workqueue_work_duration_seconds", map[string]string{"name": memcachedGK.String()}},
		{"rest_client_requests_total", map[string]string{"code": "200"}},
	}
	var last map[string]*dto.MetricFamily
	cluster.Eventually(t, 60*time.Second, "every series counted", func(ctx context.Context) (bool, error) {
		mfs, err := scrape(ctx, s)
		if err != nil {
			return false, err
		}
		last = mfs
		for _, c := range checks {
			if metricstest.Total(mfs[c.metric], c.labels) <= 0 {
				return false, fmt.Errorf("%s%v is 0 or missing", c.metric, c.labels)
			}
		}
		return true, nil
	})
	for name, mf := range last {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v := l.GetValue(); v == "counted" || v == "nosize" || v == ns {
					t.Errorf("%s has an object's name or namespace in label %s=%q", name, l.GetName(), v)
				}
			}
		}
	}
	if _, ok := last["go_goroutines"]; !ok {
		t.Error("no Go collector series")
	}

	cluster.Eventually(t, 60*time.Second, "/readyz 200 and /healthz 200", func(ctx context.Context) (bool, error) {
		for _, path := range []string{"/readyz", "/healthz"} {
			code, body, err := harness.HTTPGet(ctx, "http://"+s.ProbeAddr.String()+path)
			if err != nil {
				return false, err
			}
			if code != http.StatusOK {
				return false, fmt.Errorf("GET %s: %d: %s", path, code, body)
			}
		}
		return true, nil
	})
}

// readyCRD is the CRD of a kind that TestReady installs only after its
// Manager has started serving it.
const readyCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: probes.ready.e2e.tmplop.io
spec:
  group: ready.e2e.tmplop.io
  scope: Namespaced
  names: {plural: probes, singular: probe, kind: Probe, listKind: ProbeList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestReady: a Manager with no kind is ready; one serving a kind whose CRD
// is not installed is not (/readyz 503 naming the kind) until the CRD is
// installed and the kind's objects are listed.
func TestReady(t *testing.T) {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	m, err := controller.NewManager(ctx, env.Config, controller.Options{FieldManager: "operator-e2e-ready"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		m.Wait()
		_, _ = env.Kubectl(context.Background(), "delete", "crd", "probes.ready.e2e.tmplop.io", "--ignore-not-found", "--wait=false")
	})
	s := serveMetrics(t, m)
	readyz := func(ctx context.Context) (int, string, error) {
		return harness.HTTPGet(ctx, "http://"+s.ProbeAddr.String()+"/readyz")
	}

	root := t.TempDir()
	if err := m.Ready(); err == nil {
		t.Fatal("Ready() is nil before the kind folders were loaded")
	}
	if code, _, err := readyz(t.Context()); err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before the folders were loaded: %d %v, want 503", code, err)
	}
	if err := m.Sync(ctx, root); err != nil {
		t.Fatal(err)
	}
	if err := m.Ready(); err != nil {
		t.Fatalf("a Manager with no kind folder is not ready: %v", err)
	}
	if code, body, err := readyz(t.Context()); err != nil || code != http.StatusOK {
		t.Fatalf("/readyz with no kind: %d %q %v, want 200", code, body, err)
	}

	harness.WriteFolder(t, filepath.Join(root, "probe"), map[string]string{
		"kind.yaml":      "apiVersion: ready.e2e.tmplop.io/v1\nkind: Probe\n",
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n",
	})
	if err := m.Sync(ctx, root); err != nil {
		t.Fatal(err)
	}
	if got := len(m.Kinds()); got != 1 {
		t.Fatalf("serving %d kinds, want 1", got)
	}
	// Not ready, and staying so while the CRD is missing.
	for i := range 4 {
		if i > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		code, body, err := readyz(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "not served by the API server yet (is their CRD installed?): Probe.ready.e2e.tmplop.io") {
			t.Fatalf("/readyz while the CRD is missing: %d %q, want 503 naming the kind", code, body)
		}
	}
	if err := m.Ready(); err == nil {
		t.Fatal("Ready() is nil while the kind's CRD is missing")
	}

	crd := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(crd, []byte(readyCRD), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := env.Kubectl(t.Context(), "apply", "--server-side", "-f", crd); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out, err := env.Kubectl(t.Context(), "wait", "--for=condition=Established", "crd/probes.ready.e2e.tmplop.io"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cluster.Eventually(t, 90*time.Second, "/readyz 200 once the CRD is installed", func(ctx context.Context) (bool, error) {
		code, body, err := readyz(ctx)
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, fmt.Errorf("/readyz: %d %q", code, body)
		}
		return true, nil
	})
	if err := m.Ready(); err != nil {
		t.Errorf("/readyz was 200 but Ready() = %v", err)
	}
}

// TestMetricsAuth: on the real API server, /metrics answers an anonymous
// scrape and an invalid token 401, a ServiceAccount without the
// metrics-reader ClusterRole 403, one bound to it 200 with the operator's
// metrics; a scrape every few seconds costs no review once the answers
// are cached; and an operator whose own account may not create
// TokenReviews answers 500, never 200.
func TestMetricsAuth(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	for _, sa := range []string{"reader", "nobody"} {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// docs/metrics.md's metrics-reader ClusterRole, named for this test.
	role := "metrics-reader-" + ns
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), role, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{})
	})
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	reader, nobody := token("reader"), token("nobody")

	// The operator's reviews, counted at the wire.
	var tokenReviews, accessReviews atomic.Int64
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch {
			case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
				tokenReviews.Add(1)
			case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
				accessReviews.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	reviews, err := metrics.NewReviews(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := serveSecureMetrics(t, mgr, reviews)

	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"anonymous", "", http.StatusUnauthorized},
		{"invalid token", "not-a-token", http.StatusUnauthorized},
		{"ServiceAccount without the role", nobody, http.StatusForbidden},
	} {
		code, body, err := getMetrics(ctx, s, tc.token)
		if err != nil || code != tc.want || strings.Contains(body, "operator_reconcile_total") {
			t.Errorf("%s: GET /metrics = %d %v %q, want %d without the metrics", tc.name, code, err, body, tc.want)
		}
	}
	// The binding may take a moment to reach the authorizer's cache; a
	// denial is kept 10 s.
	var body string
	cluster.Eventually(t, 60*time.Second, "the metrics-reader gets /metrics", func(ctx context.Context) (bool, error) {
		code, b, err := getMetrics(ctx, s, reader)
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, fmt.Errorf("GET /metrics: %d %q", code, b)
		}
		body = b
		return true, nil
	})
	for _, want := range []string{`operator_reconcile_total{kind="Memcached.cache.example.com"`, `workqueue_depth{name="Memcached.cache.example.com"}`, "go_goroutines"} {
		if !strings.Contains(body, want) {
			t.Errorf("the reader's /metrics has no %s", want)
		}
	}

	// Cached: more scrapes of the same tokens ask nothing more.
	tr, sar := tokenReviews.Load(), accessReviews.Load()
	for range 5 {
		if code, _, err := getMetrics(ctx, s, reader); err != nil || code != http.StatusOK {
			t.Fatalf("GET /metrics as the reader: %d %v", code, err)
		}
		if code, _, err := getMetrics(ctx, s, nobody); err != nil || code != http.StatusForbidden {
			t.Fatalf("GET /metrics as nobody: %d %v", code, err)
		}
	}
	if dtr, dsar := tokenReviews.Load()-tr, accessReviews.Load()-sar; dtr != 0 || dsar > 1 {
		// nobody's denial may expire once (10 s) during the loop.
		t.Errorf("10 scrapes of cached tokens made %d TokenReviews and %d SubjectAccessReviews, want 0 and at most 1", dtr, dsar)
	}
	t.Logf("%d TokenReviews and %d SubjectAccessReviews in all", tokenReviews.Load(), accessReviews.Load())

	// An operator whose account may not review tokens (no
	// system:auth-delegator) fails closed: 500, logged.
	unprivileged := rest.AnonymousClientConfig(env.Config)
	unprivileged.BearerToken = nobody
	weak, err := metrics.NewReviews(unprivileged)
	if err != nil {
		t.Fatal(err)
	}
	s2 := serveSecureMetrics(t, mgr, weak)
	if code, body, err := getMetrics(ctx, s2, reader); err != nil || code != http.StatusInternalServerError || strings.Contains(body, "operator_reconcile_total") {
		t.Errorf("GET /metrics of an operator that may not create TokenReviews: %d %v %q, want 500", code, err, body)
	}

	// Plain HTTP on the HTTPS port serves nothing.
	if code, body, err := harness.HTTPGet(ctx, "http://"+s.MetricsAddr.String()+"/metrics"); err != nil || code != http.StatusBadRequest {
		t.Errorf("GET http:// on the metrics port: %d %v %q, want 400", code, err, body)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
