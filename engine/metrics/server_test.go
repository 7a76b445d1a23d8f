package metrics

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tmplop/operator/engine/reconcile"
)

func get(t *testing.T, addr net.Addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr.String() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func serve(t *testing.T, opts ServeOptions) *Server {
	t.Helper()
	s, err := Serve(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func TestProbes(t *testing.T) {
	var notReady atomic.Pointer[error]
	synced := error(nil)
	waiting := errors.New("kinds not synced: not served by the API server yet (is their CRD installed?): Late.e2e.tmplop.io")
	notReady.Store(&waiting)
	s := serve(t, ServeOptions{
		HealthProbeBindAddress: "127.0.0.1:0",
		Ready:                  func() error { return *notReady.Load() },
	})
	if s.MetricsAddr != nil {
		t.Errorf("metrics served at %v without a metrics address", s.MetricsAddr)
	}

	steps := []struct {
		name     string
		ready    *error
		path     string
		wantCode int
		wantBody string
	}{
		{"healthz while not ready", &waiting, "/healthz", http.StatusOK, "ok"},
		{"readyz while a kind waits", &waiting, "/readyz", http.StatusServiceUnavailable, "not ready: kinds not synced: not served by the API server yet (is their CRD installed?): Late.e2e.tmplop.io"},
		{"readyz once synced", &synced, "/readyz", http.StatusOK, "ok"},
		{"healthz once synced", &synced, "/healthz", http.StatusOK, "ok"},
		{"no metrics on the probe address", &synced, "/metrics", http.StatusNotFound, ""},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			notReady.Store(st.ready)
			code, body := get(t, s.ProbeAddr, st.path)
			if code != st.wantCode || (st.wantBody != "" && strings.TrimSpace(body) != st.wantBody) {
				t.Errorf("GET %s = %d %q, want %d %q", st.path, code, body, st.wantCode, st.wantBody)
			}
		})
	}
}

func TestServeAddresses(t *testing.T) {
	reg := newRegistry(fakeSource{memcached: &reconcile.Stats{}})
	cases := []struct {
		name                  string
		metrics, probes       string
		wantMetrics, wantProb bool
		same                  bool
	}{
		{"both", "127.0.0.1:0", "127.0.0.1:0", true, true, true},
		{"both apart", "127.0.0.1:0", "localhost:0", true, true, false},
		{"metrics disabled", Disabled, "127.0.0.1:0", false, true, false},
		{"probes disabled", "127.0.0.1:0", Disabled, true, false, false},
		{"both disabled", Disabled, "", false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, ServeOptions{MetricsBindAddress: tc.metrics, HealthProbeBindAddress: tc.probes, Gatherer: reg})
			if (s.MetricsAddr != nil) != tc.wantMetrics || (s.ProbeAddr != nil) != tc.wantProb {
				t.Fatalf("metrics at %v, probes at %v; want metrics %v, probes %v", s.MetricsAddr, s.ProbeAddr, tc.wantMetrics, tc.wantProb)
			}
			if tc.same != (s.MetricsAddr != nil && s.ProbeAddr != nil && s.MetricsAddr.String() == s.ProbeAddr.String()) {
				t.Errorf("metrics at %v, probes at %v: same address %v wanted", s.MetricsAddr, s.ProbeAddr, tc.same)
			}
			if s.MetricsAddr != nil {
				code, body := get(t, s.MetricsAddr, "/metrics")
				if code != http.StatusOK || !strings.Contains(body, `operator_reconcile_total{kind="Memcached.cache.example.com",result="success"} 0`) {
					t.Errorf("GET /metrics = %d, without the Memcached series:\n%s", code, body)
				}
			}
			if s.ProbeAddr != nil {
				if code, _ := get(t, s.ProbeAddr, "/readyz"); code != http.StatusOK {
					t.Errorf("GET /readyz with no Ready func = %d, want 200", code)
				}
			}
		})
	}
}

func TestServeErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	reg := prometheus.NewRegistry()
	cases := []struct {
		name string
		opts ServeOptions
		want string
	}{
		{"metrics address taken", ServeOptions{MetricsBindAddress: busy.Addr().String(), Gatherer: reg}, "serve metrics"},
		{"probe address taken", ServeOptions{MetricsBindAddress: "127.0.0.1:0", HealthProbeBindAddress: busy.Addr().String(), Gatherer: reg}, "serve health probes"},
		{"no gatherer", ServeOptions{MetricsBindAddress: "127.0.0.1:0"}, "Gatherer is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Serve(t.Context(), tc.opts)
			if err == nil {
				s.Stop()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestShutdown: the servers stop when the context ends, and Stop waits.
func TestShutdown(t *testing.T) {
	for _, how := range []string{"context", "Stop"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s, err := Serve(ctx, ServeOptions{MetricsBindAddress: "127.0.0.1:0", HealthProbeBindAddress: "127.0.0.1:0", Gatherer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			if code, _ := get(t, s.ProbeAddr, "/healthz"); code != http.StatusOK {
				t.Fatalf("healthz = %d", code)
			}
			if how == "context" {
				cancel()
			}
			s.Stop() // after cancel: waits for the shutdown
			s.Stop() // twice: harmless
			if _, err := http.Get("http://" + s.ProbeAddr.String() + "/healthz"); err == nil {
				t.Error("still serving after the shutdown")
			}
		})
	}
}
