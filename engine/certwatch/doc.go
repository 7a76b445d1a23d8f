// Package certwatch serves the certificate of a directory and reads it
// again when it changes: the files of a kubernetes.io/tls Secret mounted
// as a volume (tls.crt, tls.key and, optionally, ca.crt), written by
// cert-manager or by the user.
//
// # Responsibilities
//
//   - Read the certificate and its key once at start, refusing files that
//     do not hold a matching pair (the caller fails its start: a server
//     with no certificate serves nothing).
//   - Watch the directory, not the files (a Secret's volume swaps a
//     symbolic link to a new directory; editors replace files by
//     renaming), debounce its events so that a certificate and its key
//     written one after the other are read together, and poll behind the
//     events for volumes that send none.
//   - Keep serving the previous certificate when the new files are broken,
//     logging each distinct error once.
//   - Hand the certificate to tls.Config.GetCertificate without a lock: a
//     handshake during a reload gets the old pair or the new one, never
//     half of each.
//
// The metrics server (engine/metrics, --metrics-cert-dir) and the
// conversion webhook (engine/webhook, --webhook-cert-dir) both serve
// through it.
package certwatch
