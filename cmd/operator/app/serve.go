package app

import (
	"context"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/tmplop/operator/engine/controller"
	"github.com/tmplop/operator/engine/metrics"
)

// serveFlags are the flags of the metrics and probe servers, named and
// defaulted as in controller-runtime operators.
type serveFlags struct {
	metricsAddr    string
	probeAddr      string
	metricsSecure  bool
	metricsCertDir string
}

func addServeFlags(fl *pflag.FlagSet, f *serveFlags) {
	// Off unless asked, as in kubebuilder's scaffold for metrics: a local
	// `operator run` is a command, and two at once (a demo beside the
	// tests) must not fight over a port. deploy/ sets both.
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", "0", "address the Prometheus /metrics endpoint binds to, e.g. :8443 (0: no metrics)")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", "0", "address the /healthz and /readyz probes bind to, in plain HTTP without authentication, e.g. :8081 (0: no probes)")
	fl.BoolVar(&f.metricsSecure, "metrics-secure", true, "serve /metrics over HTTPS, only to bearer tokens whose user may get the non-resource URL /metrics (TokenReview and SubjectAccessReview: the operator's account needs system:auth-delegator); false: plain HTTP to anyone, for a local endpoint")
	fl.StringVar(&f.metricsCertDir, "metrics-cert-dir", "", "directory of the metrics server's tls.crt and tls.key, read again when they change (default: a self-signed certificate made at start)")
}

// startServing serves mgr's metrics and probes until ctx is done or stop
// is called; stop returns when the servers have shut down. Call it before
// the manager starts its kinds: their queues report to the metrics
// installed here. /readyz is 503 until every kind has listed its objects
// (Manager.Ready). Secure metrics ask cfg's API server who may read them.
func startServing(ctx context.Context, cfg *rest.Config, f serveFlags, mgr *controller.Manager) (stop func(), err error) {
	opts := metrics.ServeOptions{
		MetricsBindAddress:     f.metricsAddr,
		HealthProbeBindAddress: f.probeAddr,
		Gatherer:               metrics.NewRegistry(mgr),
		Ready:                  mgr.Ready,
		SecureMetrics:          f.metricsSecure,
		CertDir:                f.metricsCertDir,
	}
	if f.metricsSecure {
		// Clients only: nothing is asked until a scrape comes.
		reviews, err := metrics.NewReviews(cfg)
		if err != nil {
			return nil, err
		}
		opts.Guard = metrics.NewGuard(reviews, metrics.GuardOptions{})
	}
	srv, err := metrics.Serve(ctx, opts)
	if err != nil {
		return nil, err
	}
	return srv.Stop, nil
}
