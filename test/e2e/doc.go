// Package e2e runs the operator's engine in-process on a real control plane
// (test/cluster) with the repository's own templates/ and crds/, and checks
// what users see: children, status, conditions, Events, garbage collection.
package e2e
