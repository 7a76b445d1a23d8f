// Package webhook serves the CRD conversion webhook of the kinds with
// several versions: the API server posts a ConversionReview
// (apiextensions.k8s.io/v1) to /convert whenever a client reads or writes
// an object at a version other than the one stored, and the operator
// answers with the objects converted by the kind's conversion templates
// (engine/convert, through the Converters interface).
//
// # Responsibilities
//
//   - Handler: decode one ConversionReview v1 (application/json, a body of
//     at most MaxBodyBytes: the API server sends a whole list in one
//     request), check that its objects are of one kind this operator
//     converts, convert them in one ConvertList call (one pass, all or
//     nothing) and answer Success with the objects in order, or Failure
//     with a message naming the object and the template, which the API
//     server shows to the client. Numbers keep their integer type both
//     ways (apimachinery's JSON, as the API server's own decoding).
//     Anything else is a 4xx with a plain-text reason.
//   - Count every review per kind and result (Observer: engine/metrics'
//     operator_conversion_*), with a kind label only for kinds served.
//   - Serve HTTPS (TLS 1.2 or later, HTTP/1.1) on every replica, not only
//     the leader and whatever shard it holds: the API server calls the
//     Service, which may route to any of them.
//   - The certificate, from one of two sources:
//     (a) CertDir: tls.crt, tls.key and ca.crt of a mounted Secret
//     (cert-manager's or the user's), read again when they change
//     (engine/certwatch);
//     (b) otherwise a chain the operator makes and keeps in one Secret of
//     its state namespace (keeper): the first replica creates it (a
//     replica that loses the race reads the winner's), every replica
//     watches it and serves what it holds, and whichever replica sees it
//     due renews it under the resourceVersion precondition (a Conflict
//     means another did: it reads and judges that one). The serving
//     certificate is renewed in its last third; the CA (ECDSA P-256, ten
//     years) rolls in its last third, the bundle holding old and new CAs
//     until the old one expires, and a new CA signs only once it has been
//     in the bundle for CAPropagation, so that the CRDs trust it first.
//   - CABundle and CABundleChanges: what the CRDs' caBundle must hold, and
//     a signal when it changes, for the leader's CRD installer.
//
// # Why TLS is the only guard
//
// The caller is the API server (kube-apiserver's apiextensions part): it
// authenticates the webhook by the CRD's caBundle and the Service's name,
// but sends no credentials of its own by default, so the webhook has none
// to check; and a conversion reads nothing but the objects it is sent,
// writes nothing and asks the cluster nothing. Whoever reaches the port
// can therefore only make the operator run conversion templates on
// objects of its own making and read the result, which it could compute
// itself from the folder: the render budgets bound each object and
// MaxBodyBytes bounds a request, so what it can take is CPU, as from any
// HTTPS server. A NetworkPolicy admitting to the webhook's port only the
// control plane's addresses (where the cluster's network plugin enforces
// policies) takes that away too; requiring a client certificate later
// (tls.Config.ClientCAs, for API servers configured to present one) would
// not change this package's API.
package webhook
