// Package incluster tests the operator as it runs in a cluster, without a
// container runtime: deploy/ is applied to a local control plane, and the
// operator binary runs on this machine with a token of deploy/'s
// ServiceAccount, so that every request it makes is authorized by the RBAC
// that `operator rbac` generated, exactly as in a Pod. Its kind folders
// come from ConfigMaps (deploy/examples), two replicas elect a leader, and
// the metrics are read over HTTPS with a token (anonymous, unauthorized and
// authorized scrapes, and a flood of random tokens counted in TokenReviews
// at kube-apiserver), the probes over plain HTTP.
package incluster
