// Package plan tests `operator plan` on a real control plane (a minimal
// one: etcd and kube-apiserver, so that every request it counts is the
// test's, the operator's or the plan's): a plan of a changed folder
// against 200 live objects lists exactly the objects, children and fields
// the operator then changes when it serves that folder, the plan makes no
// write, a plan of the unchanged folder reports nothing and exits 0, and
// a read-only identity gets a local diff instead of an error.
package plan
