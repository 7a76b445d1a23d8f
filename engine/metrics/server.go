package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
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
	// HealthProbeBindAddress serves /healthz and /readyz; "" or "0": not
	// served. The same address as MetricsBindAddress serves all three.
	HealthProbeBindAddress string
	// Gatherer is what /metrics serves (NewRegistry).
	Gatherer prometheus.Gatherer
	// Ready is /readyz: nil means ready; its error is the 503's body.
	// nil: always ready.
	Ready func() error
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
	if metricsOn && opts.Gatherer == nil {
		return nil, errors.New("metrics: a Gatherer is required to serve /metrics")
	}

	type server struct {
		addr            string
		mux             *http.ServeMux
		what            string
		metrics, probes bool
	}
	var servers []*server
	if metricsOn {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{
			ErrorLog: errorLog{log}, ErrorHandling: promhttp.ContinueOnError,
		}))
		servers = append(servers, &server{addr: opts.MetricsBindAddress, mux: mux, what: "metrics", metrics: true})
	}
	if probesOn {
		if metricsOn && opts.HealthProbeBindAddress == opts.MetricsBindAddress {
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

	for i, sv := range servers {
		ln := listeners[i]
		hs := &http.Server{Handler: sv.mux, ReadHeaderTimeout: 10 * time.Second}
		log.Info("Serving "+sv.what, "address", ln.Addr().String())
		s.wg.Add(2)
		go func() {
			defer s.wg.Done()
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error(err, "Serving "+sv.what+" failed", "address", ln.Addr().String())
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
				log.Error(err, "Stopping the "+sv.what+" server", "address", ln.Addr().String())
				_ = hs.Close()
			}
		}()
	}
	return s, nil
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

// errorLog reports promhttp's errors (a collector failing) through klog.
type errorLog struct{ log klog.Logger }

func (l errorLog) Println(v ...any) { l.log.Error(nil, "Serving metrics: "+fmt.Sprint(v...)) }
