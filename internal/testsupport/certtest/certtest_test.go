package certtest

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

// TestCert: the certificate and key pair up, name the CommonName asked
// for, and verify for localhost and 127.0.0.1 against themselves.
func TestCert(t *testing.T) {
	certPEM, keyPEM := Cert(t, "one")
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	x, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if x.Subject.CommonName != "one" {
		t.Errorf("CommonName %q, want one", x.Subject.CommonName)
	}
	roots := x509.NewCertPool()
	roots.AddCert(x)
	for _, name := range []string{"localhost", "127.0.0.1"} {
		if _, err := x.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestWriteFiles: the files are in place, and no temporary file is left.
func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	WriteFiles(t, dir, map[string][]byte{"tls.crt": []byte("a"), "tls.key": []byte("b")})
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("%d entries, want 2: %v", len(entries), entries)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "tls.key")); err != nil || string(b) != "b" {
		t.Errorf("tls.key = %q, %v", b, err)
	}
}
