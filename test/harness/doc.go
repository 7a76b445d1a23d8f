// Package harness gives integration tests two tools for testing the operator
// the way it runs in production, as a separate process talking to an API
// server over the network, and for breaking that network on purpose:
//
//	test -> StartOperator(bin, "run", "--kubeconfig", proxy kubeconfig)
//	          -> Proxy (this package: counts, fails, cuts) -> kube-apiserver
//
// # Responsibilities
//
//   - Proxy: a plain-HTTP reverse proxy on 127.0.0.1 in front of the test
//     control plane. It holds the admin credentials, so the operator's
//     kubeconfig needs none; it records every request (method, path, query,
//     status) so a test can count writes and watches at the wire; and it
//     injects faults: Down cuts every connection, open watches included,
//     and refuses new ones until Up, and FailRequests answers chosen requests
//     with a Kubernetes Status error.
//   - BuildOperator and StartOperator: build cmd/operator once per test
//     binary and run it as a child process in its own process group, with
//     its output in a file, its peak memory readable from /proc, and a
//     cleanup that kills it and shows its last lines when the test failed.
//
// # Workflow
//
//	var env *cluster.Cluster
//
//	func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }
//
//	func TestOutage(t *testing.T) {
//		bin, err := harness.BuildOperator(env.RepoRoot())
//		// ...
//		p, err := harness.NewProxy(env.Config)
//		// ...
//		defer p.Close()
//		kc := filepath.Join(t.TempDir(), "kubeconfig")
//		if err := p.WriteKubeconfig(kc); err != nil { ... }
//		op := harness.StartOperator(t, bin, "run", "--kubeconfig", kc, "--templates", dir)
//		p.Down()
//		// ... the operator sees its watches end and its requests fail
//		p.Up()
//		// ... and must recover without a restart
//		writes := p.Count(harness.IsWrite)
//	}
//
// Nothing here starts a control plane: that is the cluster package's job.
// Nothing here is used by the operator itself.
package harness
