package app

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/tmplop/operator/engine/controller"
	"github.com/tmplop/operator/engine/metrics"
)

// serveFlags are the flags of the metrics and probe servers, named and
// defaulted as in controller-runtime operators.
type serveFlags struct {
	metricsAddr string
	probeAddr   string
}

func addServeFlags(fl *pflag.FlagSet, f *serveFlags) {
	// Off unless asked, as in kubebuilder's scaffold for metrics: a local
	// `operator run` is a command, and two at once (a demo beside the
	// tests) must not fight over a port. deploy/ sets both.
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", "0", "address the Prometheus /metrics endpoint binds to, e.g. :8080 (0: no metrics)")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", "0", "address the /healthz and /readyz probes bind to, e.g. :8081 (0: no probes)")
}

// startServing serves mgr's metrics and probes until ctx is done or stop
// is called; stop returns when the servers have shut down. Call it before
// the manager starts its kinds: their queues report to the metrics
// installed here. /readyz is 503 until every kind has listed its objects
// (Manager.Ready).
func startServing(ctx context.Context, f serveFlags, mgr *controller.Manager) (stop func(), err error) {
	srv, err := metrics.Serve(ctx, metrics.ServeOptions{
		MetricsBindAddress:     f.metricsAddr,
		HealthProbeBindAddress: f.probeAddr,
		Gatherer:               metrics.NewRegistry(mgr),
		Ready:                  mgr.Ready,
	})
	if err != nil {
		return nil, err
	}
	return srv.Stop, nil
}
