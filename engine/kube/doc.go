// Package kube is the one door from the engine to the API server for a kind.
// Every cluster call that reconciling a kind makes (mapping kinds to
// resources, server-side apply of children and status, deletes) goes through
// one Client, so that a kind's client can be swapped, for instance for one
// that impersonates the kind's own ServiceAccount, without touching the
// pipeline.
//
// # Responsibilities
//
//   - Map kinds to resources and scopes through a RESTMapper over cached
//     discovery, reset on a miss so that a CRD installed after start-up is
//     found; plurals are never guessed.
//   - Server-side apply with one field manager, forcing ownership of the
//     fields the operator renders.
//   - Offline, tell the scope of well-known kinds without a cluster, for
//     `operator render`.
package kube
