package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/tmplop/operator/engine/kube"
)

// client is an HTTPS client that trusts bundle only, and checks the
// server's name as the API server does (the Service's DNS name).
func client(bundle []byte, serverName string) *http.Client {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true, // a handshake per request: each one sees the certificate of the moment
	}}
}

// post converts one object through the server at addr, trusting bundle,
// and returns the serial of the certificate that served it.
func post(t testing.TB, c *http.Client, addr net.Addr) (string, error) {
	body := reviewBody(t, "apiextensions.k8s.io/v1", "cache.example.com/v1", object("cache.example.com/v1alpha1", "Memcached", "a", 1))
	resp, err := c.Post("https://"+addr.String()+ConvertPath, "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	var out apiextensionsv1.ConversionReview
	if err := json.Unmarshal(b, &out); err != nil || out.Response == nil || out.Response.Result.Status != metav1.StatusSuccess {
		return "", fmt.Errorf("answer %d %s: %v", resp.StatusCode, b, err)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber.Text(16), nil
}

func fakeClient() *kube.Client {
	return kube.NewForClients(kube.Clients{Core: fakeCore{fake.NewSimpleClientset().CoreV1()}}, "tmplop-operator")
}

// fakeCore is the fake core group, which cannot stream a list (the fake
// clientset says so, its typed clients do not).
type fakeCore struct{ typedcorev1.CoreV1Interface }

func (fakeCore) IsWatchListSemanticsUnSupported() bool { return true }

func serveT(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := Serve(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// TestServeCertDir: the certificate of a directory is served, verified by
// its ca.crt (CABundle); new files are served, and CABundleChanges tells.
func TestServeCertDir(t *testing.T) {
	p, now := testPolicy(), time.Now()
	c1, _, _ := mustNext(t, p, nil, now)
	dir := t.TempDir()
	write := func(c *chain) {
		for _, f := range []string{SecretCertKey, SecretKeyKey, SecretCAKey} {
			if err := os.WriteFile(filepath.Join(dir, ".tmp"), c.data[f], 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, ".tmp"), filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(c1)
	s := serveT(t, Options{Address: "127.0.0.1:0", CertDir: dir, Converters: converters{memcached: &renameConverter{}}})
	if !bytes.Equal(s.CABundle(), c1.bundle()) {
		t.Fatal("CABundle is not ca.crt")
	}
	serial, err := post(t, client(s.CABundle(), "operator-webhook.operator-system.svc"), s.Addr)
	if err != nil || serial != c1.leaf.SerialNumber.Text(16) {
		t.Fatalf("served %s, %v", serial, err)
	}
	resp, err := client(s.CABundle(), "127.0.0.1").Get("https://" + s.Addr.String() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	c2, _, _ := mustNext(t, p, nil, now)
	write(c2)
	select {
	case <-s.CABundleChanges():
	case <-time.After(15 * time.Second):
		t.Fatal("no change told")
	}
	if !bytes.Equal(s.CABundle(), c2.bundle()) {
		t.Fatal("CABundle is not the new ca.crt")
	}
	serial, err = post(t, client(s.CABundle(), "127.0.0.1"), s.Addr)
	if err != nil || serial != c2.leaf.SerialNumber.Text(16) {
		t.Fatalf("served %s, %v", serial, err)
	}
}

// secretOptions serve a chain kept in a Secret through client, with a
// serving certificate of validity, renewed after two thirds of it.
func secretOptions(c *kube.Client, ns string, validity time.Duration) Options {
	return Options{
		Address: "127.0.0.1:0", Converters: converters{memcached: &renameConverter{}},
		Client: c, Namespace: ns, SecretName: "operator-webhook-cert",
		DNSNames: []string{"operator-webhook." + ns + ".svc"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
		ServingValidity: validity, CAValidity: time.Hour, CAPropagation: time.Second,
		skewSet: true, // no back-dating: validities of seconds
	}
}

// hammer calls each server from several clients until stop, each
// verifying the server against the bundle of the moment (CABundle of the
// server it calls, as a CRD's caBundle), and counts the failures and the
// certificates seen.
type hammer struct {
	calls, failures atomic.Int64
	mu              sync.Mutex
	serials         map[string]bool
	errs            []error
	wg              sync.WaitGroup
}

func startHammer(t testing.TB, stop <-chan struct{}, servers ...*Server) *hammer {
	h := &hammer{serials: map[string]bool{}}
	for i := range 4 {
		s := servers[i%len(servers)]
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				serial, err := post(t, client(s.CABundle(), "127.0.0.1"), s.Addr)
				h.calls.Add(1)
				h.mu.Lock()
				if err != nil {
					h.failures.Add(1)
					h.errs = append(h.errs, err)
				} else {
					h.serials[serial] = true
				}
				h.mu.Unlock()
			}
		}()
	}
	return h
}

// TestRotationWithoutFailedHandshake: while clients keep calling, the
// serving certificate is renewed several times (a validity of 3 s,
// renewed after 2): not one call fails, and the calls see several
// certificates.
func TestRotationWithoutFailedHandshake(t *testing.T) {
	s := serveT(t, secretOptions(fakeClient(), "operator-system", 3*time.Second))
	stop := make(chan struct{})
	h := startHammer(t, stop, s)
	time.Sleep(7 * time.Second)
	close(stop)
	h.wg.Wait()
	t.Logf("%d calls, %d failures, %d certificates", h.calls.Load(), h.failures.Load(), len(h.serials))
	if h.failures.Load() != 0 {
		t.Errorf("%d of %d calls failed: %v", h.failures.Load(), h.calls.Load(), h.errs[:min(3, len(h.errs))])
	}
	if len(h.serials) < 3 {
		t.Errorf("%d certificates served in 7 s, want at least 3 (renewed every 2 s)", len(h.serials))
	}
}

func TestServeOptionsErrors(t *testing.T) {
	conv := converters{}
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"no converters", Options{Address: "127.0.0.1:0"}, "Converters are required"},
		{"no client", Options{Address: "127.0.0.1:0", Converters: conv, Namespace: "ns", DNSNames: []string{"a"}}, "a Client and a Namespace are required"},
		{"no names", Options{Address: "127.0.0.1:0", Converters: conv, Client: fakeClient(), Namespace: "ns"}, "at least one DNS name or IP"},
		{"serving longer than the CA", Options{Address: "127.0.0.1:0", Converters: conv, Client: fakeClient(), Namespace: "ns", DNSNames: []string{"a"},
			ServingValidity: 2 * time.Hour, CAValidity: time.Hour}, "longer than the CA's"},
		{"no certificate in the directory", Options{Address: "127.0.0.1:0", Converters: conv, CertDir: t.TempDir()}, "webhook certificate: open"},
		{"bad address", Options{Address: "127.0.0.1:99999", Converters: conv, Client: fakeClient(), Namespace: "ns", DNSNames: []string{"a"}}, "serve the conversion webhook on 127.0.0.1:99999"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			s, err := Serve(ctx, tc.opts)
			if err == nil {
				s.Stop()
				t.Fatal("served")
			}
			if !bytesContains(err.Error(), tc.want) {
				t.Errorf("error %q, want one with %q", err, tc.want)
			}
		})
	}
}

func bytesContains(s, sub string) bool { return bytes.Contains([]byte(s), []byte(sub)) }
