package certwatch

import (
	"context"
	"crypto/x509"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmplop/operator/internal/testsupport/certtest"
)

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
	c1, k1 := certtest.Cert(t, "first")
	certtest.WriteFiles(t, dir, map[string][]byte{KeyFile: k1, CertFile: c1})
	w, err := Load(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c2, k2 := certtest.Cert(t, "second")
	certtest.WriteFiles(t, dir, map[string][]byte{KeyFile: k2, CertFile: c2})
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
	c1, k1 := certtest.Cert(t, "first")
	ca, _ := certtest.Cert(t, "ca")
	certtest.WriteFiles(t, dir, map[string][]byte{KeyFile: k1, CertFile: c1})
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

	certtest.WriteFiles(t, dir, map[string][]byte{CAFile: ca})
	eventually(t, func() bool { return string(w.CA()) == string(ca) && changes.Load() == 1 })

	certtest.WriteFiles(t, dir, map[string][]byte{CertFile: []byte("not a certificate")})
	time.Sleep(300 * time.Millisecond)
	if got := servedName(t, w); got != "first" || changes.Load() != 1 {
		t.Fatalf("after a broken write: serving %s, %d changes", got, changes.Load())
	}
	c2, k2 := certtest.Cert(t, "second")
	certtest.WriteFiles(t, dir, map[string][]byte{KeyFile: k2, CertFile: c2})
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
	c, k := certtest.Cert(t, "c")
	_, otherKey := certtest.Cert(t, "other")
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
			certtest.WriteFiles(t, dir, tc.files)
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
	c1, k1 := certtest.Cert(t, "first")
	certtest.WriteFiles(t, dir, map[string][]byte{KeyFile: k1, CertFile: c1})
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
