// Package author tests the template author's loop on a real control plane:
// a kind scaffolded by `operator create kind`, its CRD generated from the
// short schema in kind.yaml and installed by `run --install-crds`, and
// folders served live as files change. Each test runs the operator binary
// on a templates directory of its own.
package author
