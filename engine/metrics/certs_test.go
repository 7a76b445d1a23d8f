package metrics

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tmplop/operator/engine/certwatch"

	"github.com/tmplop/operator/internal/testsupport/certtest"
)

// servedCert is the CommonName of the certificate served at addr.
func servedCert(t *testing.T, addr net.Addr) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr.String(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

func eventuallyServes(t *testing.T, addr net.Addr, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := servedCert(t, addr)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("serving %q, want %q", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCertDirReload: the certificate of --metrics-cert-dir is served, and
// a new one is as soon as its files change, whether replaced in place or
// swapped as a Secret's volume swaps them (a ..data symbolic link); files
// that do not hold a certificate and its key keep the previous one.
func TestCertDirReload(t *testing.T) {
	dir := t.TempDir()
	c1, k1 := certtest.Cert(t, "first")
	certtest.WriteFiles(t, dir, map[string][]byte{KeyFile: k1, CertFile: c1})
	s := serve(t, secureOptions(t, newFakeReviews(), dir))
	if got := servedCert(t, s.MetricsAddr); got != "first" {
		t.Fatalf("serving %q, want first", got)
	}

	c2, k2 := certtest.Cert(t, "second")
	certtest.WriteFiles(t, dir, map[string][]byte{KeyFile: k2, CertFile: c2})
	eventuallyServes(t, s.MetricsAddr, "second")

	// Not a certificate: the second stays.
	certtest.WriteFiles(t, dir, map[string][]byte{CertFile: []byte("not a certificate")})
	time.Sleep(3 * certwatch.Debounce)
	if got := servedCert(t, s.MetricsAddr); got != "second" {
		t.Fatalf("serving %q after a broken write, want second", got)
	}

	// A Secret's volume: tls.crt -> ..data/tls.crt, ..data -> a dated
	// directory, replaced by renaming a new link over it.
	secret := t.TempDir()
	c3, k3 := certtest.Cert(t, "third")
	if err := os.Mkdir(filepath.Join(secret, "..2026_01_01"), 0o755); err != nil {
		t.Fatal(err)
	}
	certtest.WriteFiles(t, filepath.Join(secret, "..2026_01_01"), map[string][]byte{CertFile: c3, KeyFile: k3})
	for _, l := range [][2]string{{"..2026_01_01", "..data"}, {"..data/" + CertFile, CertFile}, {"..data/" + KeyFile, KeyFile}} {
		if err := os.Symlink(l[0], filepath.Join(secret, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	s2 := serve(t, secureOptions(t, newFakeReviews(), secret))
	if got := servedCert(t, s2.MetricsAddr); got != "third" {
		t.Fatalf("serving %q, want third", got)
	}
	c4, k4 := certtest.Cert(t, "fourth")
	if err := os.Mkdir(filepath.Join(secret, "..2026_02_01"), 0o755); err != nil {
		t.Fatal(err)
	}
	certtest.WriteFiles(t, filepath.Join(secret, "..2026_02_01"), map[string][]byte{CertFile: c4, KeyFile: k4})
	if err := os.Symlink("..2026_02_01", filepath.Join(secret, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(secret, "..data_tmp"), filepath.Join(secret, "..data")); err != nil {
		t.Fatal(err)
	}
	eventuallyServes(t, s2.MetricsAddr, "fourth")
}

func TestCertDirErrors(t *testing.T) {
	c, k := certtest.Cert(t, "c")
	_, otherKey := certtest.Cert(t, "other")
	cases := []struct {
		name  string
		files map[string][]byte
		want  string
	}{
		{"no files", nil, "tls.crt: no such file"},
		{"no key", map[string][]byte{CertFile: c}, "tls.key: no such file"},
		{"key of another certificate", map[string][]byte{CertFile: c, KeyFile: otherKey}, "private key does not match"},
		{"not PEM", map[string][]byte{CertFile: []byte("x"), KeyFile: k}, "tls.crt and tls.key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			certtest.WriteFiles(t, dir, tc.files)
			opts := secureOptions(t, newFakeReviews(), dir)
			s, err := Serve(t.Context(), opts)
			if err == nil {
				s.Stop()
				t.Fatal("served")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestSelfSignedCertificate(t *testing.T) {
	now := time.Now()
	c, err := selfSignedCertificate(now)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := c.getCertificate(nil)
	x, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"localhost", "127.0.0.1", "::1"} {
		if err := x.VerifyHostname(host); err != nil {
			t.Errorf("not valid for %s: %v", host, err)
		}
	}
	if x.NotBefore.After(now) || x.NotAfter.Before(now.Add(300*24*time.Hour)) {
		t.Errorf("valid from %v to %v", x.NotBefore, x.NotAfter)
	}
	// Its own signature verifies: it is a complete certificate a client
	// can pin.
	pool := x509.NewCertPool()
	pool.AddCert(x)
	if _, err := x.Verify(x509.VerifyOptions{Roots: pool, DNSName: "localhost"}); err != nil {
		t.Errorf("does not verify against itself: %v", err)
	}
	c2, err := selfSignedCertificate(now)
	if err != nil {
		t.Fatal(err)
	}
	cert2, _ := c2.getCertificate(nil)
	if bytes.Equal(cert.Certificate[0], cert2.Certificate[0]) {
		t.Error("two self-signed certificates are the same")
	}
}

// TestCertDirVerified: the Secret charts/operator has cert-manager write
// (metrics.certManager: a leaf for the metrics Service's name, signed by a
// CA of the release's own, its key in SEC1 PEM, the CA in ca.crt) is
// served from --metrics-cert-dir such that the ServiceMonitor's tlsConfig
// (serverName and ca.crt) verifies it; another CA or another name does
// not, which is what keeps Prometheus' token from an impostor.
func TestCertDirVerified(t *testing.T) {
	const serverName = "operator-metrics.operator-system.svc"
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	newCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		key := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		ca, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return ca, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	ca, caKey, caPEM := newCA("operator-metrics-ca")
	_, _, otherCAPEM := newCA("someone else")
	key := newKey()
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{serverName, serverName + ".cluster.local"},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certtest.WriteFiles(t, dir, map[string][]byte{
		CertFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}),
		"ca.crt": caPEM,
	})
	s := serve(t, secureOptions(t, newFakeReviews(), dir))

	for _, tc := range []struct {
		name, serverName string
		ca               []byte
		wantErr          string
	}{
		{"the ServiceMonitor's tlsConfig", serverName, caPEM, ""},
		{"another CA", serverName, otherCAPEM, "certificate signed by unknown authority"},
		{"another name", "impostor.operator-system.svc", caPEM, "not impostor.operator-system.svc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(tc.ca)
			conn, err := tls.Dial("tcp", s.MetricsAddr.String(), &tls.Config{RootCAs: roots, ServerName: tc.serverName})
			if err == nil {
				conn.Close()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("TLS with serverName %s: %v", tc.serverName, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("TLS with serverName %s: %v, want an error with %q", tc.serverName, err, tc.wantErr)
			}
		})
	}
}
