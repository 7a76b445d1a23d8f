// Package sharding tests `operator run --sharding` (docs/sharding.md) with
// several operator processes on a real control plane: each replica is the
// operator binary, with a field manager (the ring) shared by the replicas of
// one test, a shard id of its own, and a harness.Proxy of its own in front
// of the API server, so that every write it sends is seen at the wire and
// attributed to it.
//
//	test -> replica r0 -> proxy 0 -\
//	        replica r1 -> proxy 1 --> kube-apiserver (+ controller-manager: GC)
//	        replica r2 -> proxy 2 -/
//
// The test kind, Shardy (testdata/crd.yaml), renders one ConfigMap per
// object (testdata/templates/shardy) and reads the child's value back into
// its status, so an object has converged when status.value equals
// spec.value, it is Reconciled at its generation, and its ConfigMap holds
// the value with the held-by label of the parent's shard.
//
// TestThreeReplicas runs its steps in order on the same 3,000 objects:
// three replicas converge them, one is SIGKILLed while its objects' specs
// change, a replacement and then a fourth replica join, a third of the
// objects are deleted. Then, while the garbage collector deletes their
// ConfigMaps, one replica alone on 3,000 fresh objects gives the peak RSS
// the three replicas' are compared with, and the last step checks what the
// collector deleted. Every process watches only the test's namespace
// (--namespace), since the shard label is the same for every ring.
//
// Beside the replicas, a probe writes a ConfigMap every 250 ms and logs the
// API server's write latency per step: on a loaded machine a replica whose
// Lease renewals take longer than the renew deadline (2 s) stops itself,
// and the probe tells that apart from a fault of the replica.
package sharding
