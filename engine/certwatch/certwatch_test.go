package certwatch

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testCert returns a certificate for localhost and its key, in PEM.
func testCert(t *testing.T, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})
}

// writeFiles writes files into dir, each replaced by a rename as an editor
// or cert-manager's csi driver would.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func servedName(t *testing.T, w *Watcher) string {
	t.Helper()
	cert, _ := w.GetCertificate(nil)
	x, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return x.Subject.CommonName
}

// TestReloadPolls: without file events (a volume that sends none), a
// change is read at the next poll; the same files parse nothing.
func TestReloadPolls(t *testing.T) {
	dir := t.TempDir()
	c1, k1 := testCert(t, "first")
	writeFiles(t, dir, map[string][]byte{KeyFile: k1, CertFile: c1})
	w, err := Load(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c2, k2 := testCert(t, "second")
	writeFiles(t, dir, map[string][]byte{KeyFile: k2, CertFile: c2})
	if changed, err := w.Reload(); err != nil || !changed {
		t.Fatalf("reload: changed %v, %v", changed, err)
	}
	if changed, err := w.Reload(); err != nil || changed {
		t.Fatalf("reload of the same files: changed %v, %v", changed, err)
	}
	if got := servedName(t, w); got != "second" {
		t.Fatalf("serving %v, want second", got)
	}
}

// TestWatchReloadsAndTells: a change seen by the watch is served and
// OnChange is called; a broken write keeps what is served and calls
// nothing.
func TestWatchReloadsAndTells(t *testing.T) {
	dir := t.TempDir()
	c1, k1 := testCert(t, "first")
	ca, _ := testCert(t, "ca")
	writeFiles(t, dir, map[string][]byte{KeyFile: k1, CertFile: c1})
	var changes atomic.Int32
	w, err := Load(Options{Dir: dir, WithCA: true, OnChange: func() { changes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if w.CA() != nil {
		t.Fatalf("CA %q without ca.crt", w.CA())
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go w.watch(ctx, nil, 50*time.Millisecond)

	writeFiles(t, dir, map[string][]byte{CAFile: ca})
	eventually(t, func() bool { return string(w.CA()) == string(ca) && changes.Load() == 1 })

	writeFiles(t, dir, map[string][]byte{CertFile: []byte("not a certificate")})
	time.Sleep(300 * time.Millisecond)
	if got := servedName(t, w); got != "first" || changes.Load() != 1 {
		t.Fatalf("after a broken write: serving %s, %d changes", got, changes.Load())
	}
	c2, k2 := testCert(t, "second")
	writeFiles(t, dir, map[string][]byte{KeyFile: k2, CertFile: c2})
	eventually(t, func() bool { return servedName(t, w) == "second" && changes.Load() == 2 })
}

func eventually(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("not reached in 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLoadErrors(t *testing.T) {
	c, k := testCert(t, "c")
	_, otherKey := testCert(t, "other")
	cases := []struct {
		name  string
		files map[string][]byte
		want  string
	}{
		{"no files", nil, "webhook certificate: open"},
		{"no key", map[string][]byte{CertFile: c}, "tls.key: no such file"},
		{"key of another certificate", map[string][]byte{CertFile: c, KeyFile: otherKey}, "private key does not match"},
		{"not PEM", map[string][]byte{CertFile: []byte("x"), KeyFile: k}, "tls.crt and tls.key"},
		{"CA not PEM", map[string][]byte{CertFile: c, KeyFile: k, CAFile: []byte("x")}, "ca.crt holds no PEM certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			_, err := Load(Options{Dir: dir, What: "webhook certificate", WithCA: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// TestWatchStops: the watch ends with the context, and with stop.
func TestWatchStops(t *testing.T) {
	dir := t.TempDir()
	c1, k1 := testCert(t, "first")
	writeFiles(t, dir, map[string][]byte{KeyFile: k1, CertFile: c1})
	w, err := Load(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"context", "stop"} {
		ctx, cancel := context.WithCancel(t.Context())
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { w.Watch(ctx, stop); close(done) }()
		if how == "context" {
			cancel()
		} else {
			close(stop)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("the watch did not stop with its %s", how)
		}
		cancel()
	}
}
