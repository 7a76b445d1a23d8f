package cluster

import (
	"sync"
	"testing"
)

// Lazy is a minimal control plane (etcd and kube-apiserver) of a package's
// own, started by the first test that asks for it, so that the package's
// unit tests and benchmarks run without one (engine/shard's Leases,
// engine/migrate, engine/webhook's Secret). Stop it in TestMain after the
// tests:
//
//	var plane cluster.Lazy
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		plane.Stop()
//		os.Exit(code)
//	}
type Lazy struct {
	once sync.Once
	env  *Cluster
	err  error
}

// Get starts the control plane at the first call, and fails t when it
// could not.
func (l *Lazy) Get(t testing.TB) *Cluster {
	t.Helper()
	l.once.Do(func() { l.env, l.err = StartWith(Options{Minimal: true}) })
	if l.err != nil {
		t.Fatalf("test cluster: %v", l.err)
	}
	return l.env
}

// Stop stops the control plane if a test started it.
func (l *Lazy) Stop() {
	if l.env != nil {
		l.env.Stop()
	}
}
