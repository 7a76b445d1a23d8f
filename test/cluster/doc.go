// Package cluster gives integration tests a real Kubernetes control plane:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with
// one fake Node, built from Go modules by hack/cluster (make cluster-bin).
//
// A test package starts one control plane for all of its tests from TestMain:
//
//	var env *cluster.Cluster
//
//	func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }
//
// When KUBECONFIG points at the kubeconfig that `make cluster-up` wrote
// (hack/cluster/.run/kubeconfig), that control plane is used instead and left
// running. No other cluster is ever used: a KUBECONFIG that points elsewhere
// is ignored, so tests can never write into a real cluster by accident.
//
// A test then works on the plane as its admin, in a namespace of its own,
// through the calls every integration package shares (objects.go,
// conditions.go): Create, CreateSpec, Get, Exists, Patch, Delete, WaitGone;
// Condition and WaitCondition, WaitReconciled for the operator's status;
// Eventually for anything else that converges; FreeAddrs for listeners.
// Running the operator and breaking its network is the harness package's
// job, not this one's.
//
//	ns := env.Namespace(t)
//	env.Create(t, widgets, ns, "apiVersion: ...\nkind: Widget\nmetadata: {name: w}\n")
//	env.WaitReconciled(t, widgets, ns, "w")
//
// StartWith(Options{Minimal: true}) starts a plane of only etcd and
// kube-apiserver, with API Priority and Fairness on, always a new one: the
// benchmark (hack/bench) measures a client on it with nothing else running.
package cluster
