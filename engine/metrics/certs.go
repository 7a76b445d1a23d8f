package metrics

import (
	"bytes"
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
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// The files of --metrics-cert-dir, named as controller-runtime and
// cert-manager's Secrets (kubernetes.io/tls) name them.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// certPollInterval: the certificate files are read again this often, a
// safety net behind file events (controller-runtime's certwatcher polls
// every 10 s too).
const certPollInterval = 10 * time.Second

// certDebounce lets the writer of a certificate and its key finish both
// before they are read, so that a rotation is not logged as a mismatch.
const certDebounce = 100 * time.Millisecond

// selfSignedValidity: a self-signed certificate cannot be verified, so
// clients skip verification (and its dates); a year, as client-go's
// cert.GenerateSelfSignedCertKey.
const selfSignedValidity = 365 * 24 * time.Hour

// certificate is the metrics server's serving certificate: a fixed one,
// or the files of a directory read again when they change.
type certificate struct {
	dir     string // "": self-signed, fixed
	current atomic.Pointer[tls.Certificate]
	// The bytes current was parsed from: a read that finds them unchanged
	// parses nothing (only the watch goroutine uses them).
	certPEM, keyPEM []byte
}

// getCertificate is tls.Config.GetCertificate.
func (c *certificate) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.current.Load(), nil
}

// describe is what the log says of the certificate served.
func (c *certificate) describe() string {
	if c.dir == "" {
		return "self-signed"
	}
	return filepath.Join(c.dir, CertFile)
}

// loadCertificate reads dir's tls.crt and tls.key; watch reads them again
// when they change.
func loadCertificate(dir string) (*certificate, error) {
	c := &certificate{dir: dir}
	if _, err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// reload reads the files again and serves them when they changed and
// hold a certificate and its key; else the certificate served is kept.
func (c *certificate) reload() (changed bool, err error) {
	certPEM, err := os.ReadFile(filepath.Join(c.dir, CertFile))
	if err != nil {
		return false, fmt.Errorf("metrics certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(c.dir, KeyFile))
	if err != nil {
		return false, fmt.Errorf("metrics certificate key: %w", err)
	}
	if bytes.Equal(certPEM, c.certPEM) && bytes.Equal(keyPEM, c.keyPEM) {
		return false, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("metrics certificate in %s: %s and %s: %w", c.dir, CertFile, KeyFile, err)
	}
	c.current.Store(&cert)
	c.certPEM, c.keyPEM = certPEM, keyPEM
	return true, nil
}

// watch reloads the files on the directory's events and every
// certPollInterval until ctx is done or stop is closed. It watches the
// directory, not the files: a Secret's volume swaps a symbolic link to a
// new directory of files, and editors replace files by renaming.
func (c *certificate) watch(ctx context.Context, stop <-chan struct{}) {
	log := klog.FromContext(ctx).WithValues("dir", c.dir)
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w, err := fsnotify.NewWatcher(); err != nil {
		log.Error(err, "No file events for the metrics certificate; reading it every interval", "interval", certPollInterval.String())
	} else {
		defer w.Close()
		if err := w.Add(c.dir); err != nil {
			log.Error(err, "No file events for the metrics certificate; reading it every interval", "interval", certPollInterval.String())
		} else {
			events, errs = w.Events, w.Errors
		}
	}
	poll := time.NewTicker(certPollInterval)
	defer poll.Stop()
	debounce := time.NewTimer(0)
	<-debounce.C
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-events:
			debounce.Reset(certDebounce)
			continue
		case err := <-errs:
			log.V(1).Info("File events of the metrics certificate", "err", err.Error())
			continue
		case <-debounce.C:
		case <-poll.C:
		}
		changed, err := c.reload()
		switch {
		case err != nil:
			// Logged once per distinct error, not at every poll.
			if err.Error() != lastErr {
				log.Error(err, "Metrics certificate not reloaded; serving the previous one")
			}
			lastErr = err.Error()
		case changed:
			lastErr = ""
			log.Info("Metrics certificate reloaded", "notAfter", notAfter(c.current.Load()))
		}
	}
}

func notAfter(cert *tls.Certificate) string {
	if cert == nil || len(cert.Certificate) == 0 {
		return ""
	}
	x, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return ""
	}
	return x.NotAfter.UTC().Format(time.RFC3339)
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
	c := &certificate{}
	c.current.Store(&tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key})
	return c, nil
}
