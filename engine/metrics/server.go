package metrics

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// Disabled is the bind address that serves nothing, as controller-runtime
// spells it.
const Disabled = "0"

// shutdownTimeout bounds how long in-flight requests may finish when the
// servers stop.
const shutdownTimeout = 5 * time.Second

// ServeOptions choose what Serve serves.
type ServeOptions struct {
	// MetricsBindAddress serves /metrics from Gatherer; "" or "0": not served.
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz, always in plain
	// HTTP and to anyone (the kubelet probes them); "" or "0": not served.
	// The same address as MetricsBindAddress serves all three, unless the
	// metrics are secure: that is refused (one port cannot be both HTTPS
	// with authentication and plain HTTP without), but for port 0, where
	// each gets a free port of its own.
	HealthProbeBindAddress string
	// Gatherer is what /metrics serves (NewRegistry).
	Gatherer prometheus.Gatherer
	// Ready is /readyz: nil means ready; its error is the 503's body.
	// nil: always ready.
	Ready func() error

	// SecureMetrics serves /metrics over HTTPS (TLS 1.2 or later,
	// HTTP/1.1 only) to the requests Guard lets through. false: plain HTTP
	// to anyone, for an endpoint only the local host can reach.
	SecureMetrics bool
	// Guard authenticates and authorizes the /metrics requests; required
	// with SecureMetrics.
	Guard *Guard
	// CertDir holds the metrics' certificate and key (CertFile, KeyFile),
	// read again when they change, e.g. rotated by cert-manager. "": a
	// self-signed certificate made at start.
	CertDir string
}

// Server is the running metrics and probe servers.
type Server struct {
	// MetricsAddr and ProbeAddr are where they listen, nil when not served
	// (the actual port when asked for port 0).
	MetricsAddr, ProbeAddr net.Addr

	stopping chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// Serve starts serving what opts ask for and returns once the addresses
// are bound: a bind error is returned, not logged. The servers shut down
// gracefully when ctx is done or Stop is called.
func Serve(ctx context.Context, opts ServeOptions) (*Server, error) {
	log := klog.FromContext(ctx)
	s := &Server{stopping: make(chan struct{})}
	metricsOn := opts.MetricsBindAddress != "" && opts.MetricsBindAddress != Disabled
	probesOn := opts.HealthProbeBindAddress != "" && opts.HealthProbeBindAddress != Disabled
	shared := metricsOn && probesOn && opts.HealthProbeBindAddress == opts.MetricsBindAddress
	if shared && opts.SecureMetrics {
		if !anyPort(opts.MetricsBindAddress) {
			return nil, fmt.Errorf("metrics: the metrics and the health probes cannot share %s: the metrics are HTTPS with authentication, "+
				"the probes plain HTTP without; give them different ports (or serve the metrics in plain HTTP)", opts.MetricsBindAddress)
		}
		shared = false
	}

	var servers []*server
	var cert *certificate
	if metricsOn {
		sv, c, err := metricsServer(log, opts)
		if err != nil {
			return nil, err
		}
		servers, cert = append(servers, sv), c
	}
	if probesOn {
		if shared {
			servers[0].what, servers[0].probes = "metrics and health probes", true
		} else {
			servers = append(servers, &server{addr: opts.HealthProbeBindAddress, mux: http.NewServeMux(), what: "health probes", probes: true})
		}
		mux := servers[len(servers)-1].mux
		mux.HandleFunc("/healthz", Healthz)
		mux.Handle("/readyz", Readyz(opts.Ready))
	}

	var listeners []net.Listener
	for _, sv := range servers {
		ln, err := net.Listen("tcp", sv.addr)
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return nil, fmt.Errorf("serve %s on %s: %w", sv.what, sv.addr, err)
		}
		listeners = append(listeners, ln)
		if sv.metrics {
			s.MetricsAddr = ln.Addr()
		}
		if sv.probes {
			s.ProbeAddr = ln.Addr()
		}
	}
	if cert != nil && cert.files != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			cert.watch(ctx, s.stopping)
		}()
	}
	for i, sv := range servers {
		s.start(ctx, sv, listeners[i], cert)
	}
	return s, nil
}

// server is one of the HTTP servers: what it serves, and how.
type server struct {
	addr            string
	mux             *http.ServeMux
	what            string
	metrics, probes bool
	tls             *tls.Config // nil: plain HTTP
}

// metricsServer is the /metrics server of opts: plain, or HTTPS behind
// opts.Guard with its certificate.
func metricsServer(log klog.Logger, opts ServeOptions) (*server, *certificate, error) {
	if opts.Gatherer == nil {
		return nil, nil, errors.New("metrics: a Gatherer is required to serve /metrics")
	}
	var h http.Handler = promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{
		ErrorLog: errorLog{log}, ErrorHandling: promhttp.ContinueOnError,
	})
	sv := &server{addr: opts.MetricsBindAddress, mux: http.NewServeMux(), what: "metrics", metrics: true}
	var cert *certificate
	if opts.SecureMetrics {
		if opts.Guard == nil {
			return nil, nil, errors.New("metrics: a Guard is required to serve secure /metrics")
		}
		var err error
		if opts.CertDir != "" {
			cert, err = loadCertificate(opts.CertDir)
		} else {
			cert, err = selfSignedCertificate(time.Now())
		}
		if err != nil {
			return nil, nil, err
		}
		h = opts.Guard.Wrap(h)
		sv.tls = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cert.getCertificate}
	}
	sv.mux.Handle("/metrics", h)
	return sv, cert, nil
}

// start serves sv on ln until the servers stop.
func (s *Server) start(ctx context.Context, sv *server, ln net.Listener, cert *certificate) {
	log := klog.FromContext(ctx)
	addr := ln.Addr().String()
	hs := &http.Server{
		Handler: sv.mux, ReadHeaderTimeout: 10 * time.Second,
		// Requests carry the run's logger; the graceful shutdown, not the
		// run's end, is what cancels them.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:    stdlog.New(serverErrorLog{log.WithValues("address", addr)}, "", 0),
	}
	serve := func() error { return hs.Serve(ln) }
	if sv.tls != nil {
		// HTTP/1.1 only, as controller-runtime's metrics server: HTTP/2
		// brings nothing to one scrape every few seconds, and its stream
		// handling is where the rapid-reset (CVE-2023-44487) and
		// CONTINUATION-flood (CVE-2023-45288) attacks struck.
		hs.Protocols = new(http.Protocols)
		hs.Protocols.SetHTTP1(true)
		hs.TLSConfig = sv.tls
		serve = func() error { return hs.ServeTLS(ln, "", "") }
		log.Info("Serving "+sv.what+" over HTTPS to authorized bearer tokens", "address", addr, "certificate", cert.describe())
	} else {
		log.Info("Serving "+sv.what, "address", addr)
		if sv.metrics && !loopback(ln.Addr()) {
			log.Info("Metrics served in plain HTTP without authentication to anyone who reaches the address; --metrics-secure serves them over HTTPS to authorized tokens only", "address", addr)
		}
	}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "Serving "+sv.what+" failed", "address", addr)
		}
	}()
	go func() {
		defer s.wg.Done()
		select {
		case <-ctx.Done():
		case <-s.stopping:
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			log.Error(err, "Stopping the "+sv.what+" server", "address", addr)
			_ = hs.Close()
		}
	}()
}

// Stop shuts the servers down, letting requests in flight finish (for a
// few seconds), and returns when they have stopped. It is safe to call
// more than once, and after the context given to Serve is done.
func (s *Server) Stop() {
	s.stopOnce.Do(func() { close(s.stopping) })
	s.wg.Wait()
}

// Healthz answers 200 while the process serves HTTP at all.
func Healthz(w http.ResponseWriter, _ *http.Request) {
	text(w, http.StatusOK, "ok\n")
}

// Readyz answers 200 when ready returns nil (or is nil), else 503 with
// the error: what is not synced yet.
func Readyz(ready func() error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if ready != nil {
			if err := ready(); err != nil {
				text(w, http.StatusServiceUnavailable, "not ready: "+err.Error()+"\n")
				return
			}
		}
		text(w, http.StatusOK, "ok\n")
	})
}

func text(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

// loopback reports whether addr is reachable from this host only.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// anyPort reports whether addr asks for any free port (port 0).
func anyPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && port == "0"
}

// serverErrorLog takes net/http's own messages (TLS handshakes that failed:
// port scanners, a plain-HTTP client on the HTTPS port) at -v 1.
type serverErrorLog struct{ log klog.Logger }

func (l serverErrorLog) Write(p []byte) (int, error) {
	l.log.V(1).Info("HTTP server error", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}

// errorLog reports promhttp's errors (a collector failing) through klog.
type errorLog struct{ log klog.Logger }

func (l errorLog) Println(v ...any) { l.log.Error(nil, "Serving metrics: "+fmt.Sprint(v...)) }
