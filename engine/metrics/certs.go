package metrics

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"github.com/tmplop/operator/engine/certwatch"
)

// The files of --metrics-cert-dir, named as controller-runtime and
// cert-manager's Secrets (kubernetes.io/tls) name them.
const (
	CertFile = certwatch.CertFile
	KeyFile  = certwatch.KeyFile
)

// selfSignedValidity: a self-signed certificate cannot be verified, so
// clients skip verification (and its dates); a year, as client-go's
// cert.GenerateSelfSignedCertKey.
const selfSignedValidity = 365 * 24 * time.Hour

// certificate is the metrics server's serving certificate: a fixed one,
// or the files of a directory read again when they change.
type certificate struct {
	files *certwatch.Watcher // nil: self-signed, fixed
	fixed *tls.Certificate
}

// getCertificate is tls.Config.GetCertificate.
func (c *certificate) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c.files != nil {
		return c.files.GetCertificate(hello)
	}
	return c.fixed, nil
}

// describe is what the log says of the certificate served.
func (c *certificate) describe() string {
	if c.files == nil {
		return "self-signed"
	}
	return c.files.Path()
}

// loadCertificate reads dir's tls.crt and tls.key; watch reads them again
// when they change.
func loadCertificate(dir string) (*certificate, error) {
	w, err := certwatch.Load(certwatch.Options{Dir: dir, What: "metrics certificate"})
	if err != nil {
		return nil, err
	}
	return &certificate{files: w}, nil
}

// watch reads the directory's files again when they change, until ctx is
// done or stop is closed; a self-signed certificate has nothing to watch.
func (c *certificate) watch(ctx context.Context, stop <-chan struct{}) {
	if c.files != nil {
		c.files.Watch(ctx, stop)
	}
}

// selfSignedCertificate makes a certificate for this host, localhost and
// the loopback addresses, signed by its own key.
//
// An ECDSA P-256 key, not client-go's cert.GenerateSelfSignedCertKey: that
// generates two RSA-2048 keys (a CA's and the server's) at every start, which
// costs far more CPU than one P-256 key, and the CA's key is thrown away,
// so no client could ever verify the certificate by it.
func selfSignedCertificate(now time.Time) (*certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("metrics certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("metrics certificate: %w", err)
	}
	host, _ := os.Hostname() // a Pod's name
	dns := []string{"localhost"}
	if host != "" && host != "localhost" {
		dns = append([]string{host}, dns...)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: dns[0] + "@" + fmt.Sprint(now.Unix())},
		NotBefore:             now.Add(-time.Hour), // clock skew
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              dns,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("metrics certificate: %w", err)
	}
	return &certificate{fixed: &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}}, nil
}
