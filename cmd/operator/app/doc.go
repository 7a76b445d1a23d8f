// Package app is the operator's command line: one file per command (run,
// render, version), each a NewXCommand with a private flags struct. Only
// Main decides the exit code; errors are printed once, at the top.
package app
