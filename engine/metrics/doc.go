// Package metrics serves the operator's Prometheus metrics and its health
// probes.
//
// # Responsibilities
//
//   - Build a registry of the operator's own (never the global default
//     registry): Go and process collectors; per-kind counters read from
//     each kind's reconcile.Stats at scrape time (no cost on the workers'
//     path); reconcile and render durations and failures by reason, which
//     Stats cannot hold, through reconcile.Observer; client-go's workqueue
//     metrics (workqueue.MetricsProvider) and REST client metrics.
//   - Label every per-kind series with the kind's GroupKind string and
//     nothing unbounded: never an object's name or namespace.
//   - Serve /metrics, and /healthz and /readyz (503 with what is not synced
//     until every kind has listed its objects), and shut down with the run.
//   - Serve /metrics over HTTPS (TLS 1.2 or later, HTTP/1.1) with the
//     certificate of a directory, read again when it changes (engine/certwatch), or a
//     self-signed one; only to bearer tokens whose user may get the
//     non-resource URL /metrics: a Guard asks the API server (TokenReview,
//     then SubjectAccessReview) and caches its answers for a short while,
//     as kubebuilder's scaffold does with controller-runtime's filters.
//   - Bound what anyone who reaches the port can make the Guard ask: tokens
//     without a cached answer are reviewed at a limited rate, a bounded
//     number at once, once however many requests carry them (429 with
//     Retry-After beyond, counted); valid and invalid answers are cached
//     apart, least recently used first out, so that no flood of made-up
//     tokens drops a scraper's answer or throttles its review.
//     The probes stay plain HTTP, without authentication, on a port of
//     their own: the kubelet probes them.
//
// Metric names mirror controller-runtime's (controller_runtime_reconcile_total
// becomes operator_reconcile_total, ...); docs/metrics.md lists them all.
//
// client-go's hooks are process-wide and take only their first setting:
// Install (which NewRegistry calls) must run before the Manager creates
// the queues it should count, that is before it starts any kind.
package metrics
