package metrics

import (
	"context"
	"crypto/tls"
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

// secureOptions serve a registry's metrics on a loopback port over HTTPS,
// behind a Guard asking f, with the certificate of dir ("": self-signed).
func secureOptions(t *testing.T, f *fakeReviews, dir string) ServeOptions {
	t.Helper()
	return ServeOptions{
		MetricsBindAddress: "127.0.0.1:0",
		Gatherer:           newRegistry(fakeSource{memcached: &reconcile.Stats{}}),
		SecureMetrics:      true,
		Guard:              NewGuard(f.reviews(), GuardOptions{}),
		CertDir:            dir,
	}
}

// httpsGet GETs url with token ("": none) over a client that skips the
// verification of the self-signed certificate and would speak HTTP/2.
func httpsGet(t *testing.T, url, token string) (*http.Response, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		ForceAttemptHTTP2: true,
	}}
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// TestSecureMetrics: /metrics over HTTPS (TLS 1.2 or later, HTTP/1.1)
// only to a token allowed to get it; the probes in plain HTTP to anyone.
func TestSecureMetrics(t *testing.T) {
	f := newFakeReviews()
	opts := secureOptions(t, f, "")
	opts.HealthProbeBindAddress = opts.MetricsBindAddress // port 0: a port each
	s := serve(t, opts)
	if s.MetricsAddr.String() == s.ProbeAddr.String() {
		t.Fatalf("secure metrics and probes share %v", s.MetricsAddr)
	}
	url := "https://" + s.MetricsAddr.String() + "/metrics"
	const series = `operator_reconcile_total{kind="Memcached.cache.example.com",result="success"} 0`

	cases := []struct {
		name     string
		token    string
		wantCode int
	}{
		{"anonymous", "", http.StatusUnauthorized},
		{"invalid token", "forged", http.StatusUnauthorized},
		{"user without the right", "other-token", http.StatusForbidden},
		{"reader", "reader-token", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := httpsGet(t, url, tc.token)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("GET /metrics = %d %q, want %d", resp.StatusCode, body, tc.wantCode)
			}
			if got := strings.Contains(body, series); got != (tc.wantCode == http.StatusOK) {
				t.Errorf("metrics in the body: %v, with %d:\n%s", got, resp.StatusCode, body)
			}
			if resp.ProtoMajor != 1 {
				t.Errorf("served over %s, want HTTP/1.1", resp.Proto)
			}
		})
	}

	t.Run("HTTP/2 not offered", func(t *testing.T) {
		conn, err := tls.Dial("tcp", s.MetricsAddr.String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if p := conn.ConnectionState().NegotiatedProtocol; p == "h2" {
			t.Errorf("negotiated %q", p)
		}
	})
	t.Run("TLS 1.1 refused", func(t *testing.T) {
		conn, err := tls.Dial("tcp", s.MetricsAddr.String(), &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11})
		if err == nil {
			conn.Close()
			t.Fatal("a TLS 1.1 handshake succeeded")
		}
	})
	t.Run("plain HTTP on the metrics port", func(t *testing.T) {
		code, body := get(t, s.MetricsAddr, "/metrics")
		if code != http.StatusBadRequest || strings.Contains(body, series) {
			t.Errorf("GET http:// = %d %q, want 400 without the metrics", code, body)
		}
	})
	t.Run("probes in plain HTTP, without a token", func(t *testing.T) {
		for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 404} {
			if code, body := get(t, s.ProbeAddr, path); code != want {
				t.Errorf("GET %s on the probe port = %d %q, want %d", path, code, body, want)
			}
		}
	})
	if tr, sar := f.counts(); tr != 3 || sar != 2 {
		t.Errorf("%d TokenReviews, %d SubjectAccessReviews; want 3 and 2", tr, sar)
	}
}

func TestSecureServeErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fixed := l.Addr().String()
	l.Close()
	cases := []struct {
		name   string
		modify func(*ServeOptions)
		want   string
	}{
		{"metrics and probes on one port", func(o *ServeOptions) { o.MetricsBindAddress, o.HealthProbeBindAddress = fixed, fixed },
			"the metrics and the health probes cannot share " + fixed},
		{"no guard", func(o *ServeOptions) { o.Guard = nil }, "a Guard is required"},
		{"no certificate in the directory", func(o *ServeOptions) { o.CertDir = t.TempDir() }, "tls.crt: no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := secureOptions(t, newFakeReviews(), "")
			tc.modify(&opts)
			s, err := Serve(t.Context(), opts)
			if err == nil {
				s.Stop()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
	// Plain metrics may share the probes' port, as before.
	s := serve(t, ServeOptions{MetricsBindAddress: fixed, HealthProbeBindAddress: fixed, Gatherer: prometheus.NewRegistry()})
	if s.MetricsAddr.String() != s.ProbeAddr.String() {
		t.Errorf("plain metrics at %v, probes at %v: want one port", s.MetricsAddr, s.ProbeAddr)
	}
}
