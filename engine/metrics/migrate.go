package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tmplop/operator/engine/migrate"
)

// migrationMetrics count engine/migrate's work: how far a kind's storage
// migration is (operator_storage_migration_objects_total against the
// kind's object count) and how its runs ended.
type migrationMetrics struct {
	objects *prometheus.CounterVec
	runs    *prometheus.CounterVec
}

var _ migrate.Observer = (*migrationMetrics)(nil)

func newMigrationMetrics() *migrationMetrics {
	return &migrationMetrics{
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "operator_storage_migration_objects_total",
			Help: "Objects written back at their CRD's storage version by the storage migration, by CRD.",
		}, []string{"crd"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "operator_storage_migrations_total",
			Help: "Storage migrations that ended, by CRD and result (Migrated, MigrationFailed).",
		}, []string{"crd", "result"}),
	}
}

// defaultMigration is the process's: Migration hands it to engine/migrate,
// NewRegistry exposes it.
var defaultMigration = newMigrationMetrics()

// Migration is the observer of engine/migrate's Migrator whose counts
// NewRegistry exposes.
func Migration() migrate.Observer { return defaultMigration }

func (m *migrationMetrics) ObserveMigrated(crd string, n int) {
	m.objects.WithLabelValues(crd).Add(float64(n))
}

func (m *migrationMetrics) ObserveRun(crd, result string) { m.runs.WithLabelValues(crd, result).Inc() }

// Describe implements prometheus.Collector.
func (m *migrationMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.objects.Describe(ch)
	m.runs.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *migrationMetrics) Collect(ch chan<- prometheus.Metric) {
	m.objects.Collect(ch)
	m.runs.Collect(ch)
}
