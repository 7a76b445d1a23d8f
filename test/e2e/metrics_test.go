package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/controller"
	"github.com/tmplop/operator/engine/metrics"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// serveMetrics serves m's metrics and probes on loopback ports for the test.
func serveMetrics(t *testing.T, m *controller.Manager) *metrics.Server {
	t.Helper()
	s, err := metrics.Serve(klog.NewContext(t.Context(), klog.Background()), metrics.ServeOptions{
		MetricsBindAddress: "127.0.0.1:0", HealthProbeBindAddress: "127.0.0.1:0",
		Gatherer: metrics.NewRegistry(m), Ready: m.Ready,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// scrape returns the families of /metrics, parsed.
func scrape(ctx context.Context, s *metrics.Server) (map[string]*dto.MetricFamily, error) {
	code, body, err := harness.HTTPGet(ctx, "http://"+s.MetricsAddr.String()+"/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d: %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(strings.NewReader(body))
}

// total sums the series of a family whose labels include labels: counter
// and gauge values, histogram counts.
func total(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	var sum float64
next:
	for _, m := range mfs[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return sum
}

// TestMetrics: the package's Manager, serving templates/, exposes per-kind
// and workqueue series for a kind once one of its objects is reconciled,
// and is ready.
func TestMetrics(t *testing.T) {
	s := serveMetrics(t, mgr)
	ns := env.Namespace(t)
	create(t, memcachedGVR, ns, memcached("counted", 1))
	create(t, memcachedGVR, ns, memcached("nosize", -1)) // fails: RenderFailed

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
			if total(mfs, c.metric, c.labels) <= 0 {
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

	dir := filepath.Join(root, "probe")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"kind.yaml":      "apiVersion: ready.e2e.tmplop.io/v1\nkind: Probe\n",
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
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
