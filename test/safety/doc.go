// Package safety tests the engine against hostile and careless input on a
// real control plane: render bombs, takeover of objects it did not create,
// escapes from a parent's namespace, prunes that would destroy, write
// loops, an API server that goes away, and a process that is signaled.
// Each test reproduces a failure of the engine before these guards (see
// docs/security.md for the list and what each test showed).
package safety
