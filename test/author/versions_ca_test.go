package author

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/tmplop/operator/engine/webhook"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// TestVersionsCARolled rolls the conversion webhook's CA while clients
// read objects at v1alpha1, the version the API server converts through
// the webhook: several goroutines list them in a tight loop while the
// webhook's Secret is deleted, which makes the operator roll its CA (the
// way to force a new chain before the old one's time). Not one read may
// fail: the new CA must be in the CRD's caBundle before it signs the
// certificate served (the old CA stays in the bundle meanwhile). At the
// end the CRD's bundle holds the new CA and the certificate served is
// signed by it.
//
// One API server keeps its connections to the webhook alive, and a
// connection keeps the certificate of its handshake: the reads alone would
// not see a certificate served before its CA is in the bundle, which any
// new connection (another API server, a restart, an idle connection
// closed) meets. So a prober also makes a new handshake in a loop, each
// against the CRD's caBundle as it is at that moment, and counts those
// that fail.
func TestVersionsCARolled(t *testing.T) {
	ctx := context.Background()
	const (
		crdName     = "memcacheds.cache.example.com"
		objects     = 20
		readers     = 4
		propagation = 5 * time.Second
	)
	if _, err := env.Kubectl(ctx, "delete", "crd", crdName, "--ignore-not-found", "--wait=true", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = env.Kubectl(context.Background(), "delete", "crd", crdName, "--wait=false") })
	ns := env.Namespace(t)
	templates := t.TempDir()
	if err := os.CopyFS(filepath.Join(templates, "memcached"), os.DirFS(filepath.Join(env.RepoRoot(), "examples", "versions", "templates", "memcached"))); err != nil {
		t.Fatal(err)
	}
	// A short propagation, so that the new CA signs within the test; the
	// API server has the bundle the operator re-injects within a second.
	op := harness.StartOperator(t, bin, "run", "--kubeconfig", env.Kubeconfig, "--templates", templates, "--install-crds",
		"--namespace", ns, "--state-namespace", ns, "--field-manager", "author-versions-ca",
		"--webhook-bind-address", "127.0.0.1:0", "--webhook-ca-propagation", propagation.String())
	liveWaitOutput(t, op, 60*time.Second, "Serving kind")
	for i := range objects {
		env.CreateSpec(t, memcachedsV1, "Memcached", ns, fmt.Sprintf("m%d", i), map[string]any{"replicas": int64(i % 3)})
	}
	cluster.Eventually(t, 60*time.Second, "every object reads at v1alpha1", func(ctx context.Context) (bool, error) {
		n, err := caReadAll(ctx, ns)
		return n == objects, err
	})
	oldCA := caSecretCA(t, ns)
	oldBundle := installGetCRD(t, crdName).Spec.Conversion.Webhook.ClientConfig.CABundle
	if !caHolds(oldBundle, oldCA) {
		t.Fatal("the CRD's caBundle does not hold the Secret's CA before the roll")
	}

	t.Logf("%d clients read the %d objects at v1alpha1 and a prober makes new handshakes while the CA rolls", readers, objects)
	var reads, failed, handshakes, badHandshakes atomic.Int64
	var mu sync.Mutex
	var failures []string
	fail := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 8 {
			failures = append(failures, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), what, err))
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	stopReaders := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopReaders)
	loop := func(f func()) {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				f()
			}
		})
	}
	for range readers {
		loop(func() {
			n, err := caReadAll(ctx, ns)
			reads.Add(1)
			if err == nil && n != objects {
				err = fmt.Errorf("%d objects, want %d", n, objects)
			}
			if err != nil {
				failed.Add(1)
				fail("read", err)
			}
		})
	}
	loop(func() {
		err := caHandshake(ctx, crdName)
		handshakes.Add(1)
		if err != nil {
			badHandshakes.Add(1)
			fail("handshake", err)
		}
	})
	time.Sleep(time.Second) // reads before the roll too
	if err := cs.CoreV1().Secrets(ns).Delete(ctx, webhook.DefaultSecretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rolled := time.Now()
	var newCA *x509.Certificate
	cluster.Eventually(t, propagation+60*time.Second, "the new CA in the CRD and signing the certificate served", func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, webhook.DefaultSecretName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cas := caParse(s.Data[webhook.SecretCAKey])
		if len(cas) == 0 || cas[0].Equal(oldCA) {
			return false, fmt.Errorf("the Secret's CA is not new yet")
		}
		newCA = cas[0]
		crd := installGetCRD(t, crdName)
		cc := crd.Spec.Conversion.Webhook.ClientConfig
		if !caHolds(cc.CABundle, newCA) {
			return false, fmt.Errorf("the CRD's caBundle does not hold the new CA")
		}
		return true, caServedBy(ctx, crd, newCA)
	})
	t.Logf("the new CA signs the certificate served %s after the Secret was deleted", time.Since(rolled).Round(time.Millisecond))
	time.Sleep(3 * time.Second) // reads on the new chain
	stopReaders()
	t.Logf("%d reads of %d objects, %d failed; %d new handshakes, %d failed", reads.Load(), objects, failed.Load(), handshakes.Load(), badHandshakes.Load())
	if failed.Load() != 0 || badHandshakes.Load() != 0 {
		t.Errorf("while the CA rolled, %d of %d reads at v1alpha1 failed and %d of %d new handshakes against the CRD's caBundle; the first:\n%s",
			failed.Load(), reads.Load(), badHandshakes.Load(), handshakes.Load(), strings.Join(failures, "\n"))
	}
	if reads.Load() < readers*10 || handshakes.Load() < 50 {
		t.Errorf("only %d reads and %d handshakes: the roll was not read through", reads.Load(), handshakes.Load())
	}
	if bytes.Equal(installGetCRD(t, crdName).Spec.Conversion.Webhook.ClientConfig.CABundle, oldBundle) {
		t.Error("the CRD's caBundle did not change")
	}
	if n, err := caReadAll(ctx, ns); err != nil || n != objects {
		t.Errorf("read at v1alpha1 on the new chain: %d objects, %v", n, err)
	}
}

// caReadAll lists ns's Memcacheds at v1alpha1 and checks each was
// converted (spec.size, not spec.replicas); it returns how many.
func caReadAll(ctx context.Context, ns string) (int, error) {
	l, err := caQuiet().Resource(memcachedsV1alpha1).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	for _, o := range l.Items {
		if _, ok, _ := unstructured.NestedInt64(o.Object, "spec", "size"); !ok {
			return 0, fmt.Errorf("%s at v1alpha1 has no spec.size: %v", o.GetName(), o.Object["spec"])
		}
	}
	return len(l.Items), nil
}

// caQuiet is the admin client without v1alpha1's deprecation warning,
// which would log every read.
var caQuiet = sync.OnceValue(func() *dynamic.DynamicClient {
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = rest.NoWarnings{}
	return dynamic.NewForConfigOrDie(cfg)
})

// caHandshake makes a new TLS handshake with the webhook where the CRD
// sends the API server, verified against the CRD's caBundle as it is now:
// what a new connection of the API server meets.
func caHandshake(ctx context.Context, crdName string) error {
	u, err := caQuiet().Resource(crdsResource).Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
		return err
	}
	cas := caParse(crd.Spec.Conversion.Webhook.ClientConfig.CABundle)
	if len(cas) == 0 {
		return fmt.Errorf("the CRD's caBundle holds no CA")
	}
	return caServedBy(ctx, &crd, cas...)
}

// caSecretCA is the CA that signs in the webhook's Secret now.
func caSecretCA(t *testing.T, ns string) *x509.Certificate {
	t.Helper()
	s, err := cs.CoreV1().Secrets(ns).Get(context.Background(), webhook.DefaultSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cas := caParse(s.Data[webhook.SecretCAKey])
	if len(cas) == 0 {
		t.Fatalf("Secret %s holds no CA", webhook.DefaultSecretName)
	}
	return cas[0]
}

// caParse reads the certificates of a PEM bundle, in order.
func caParse(bundle []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		if b, bundle = pem.Decode(bundle); b == nil {
			return out
		}
		if x, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, x)
		}
	}
}

func caHolds(bundle []byte, ca *x509.Certificate) bool {
	for _, x := range caParse(bundle) {
		if x.Equal(ca) {
			return true
		}
	}
	return false
}

// caServedBy dials the webhook where the CRD sends the API server and
// verifies the certificate served against cas alone.
func caServedBy(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, cas ...*x509.Certificate) error {
	u, err := url.Parse(*crd.Spec.Conversion.Webhook.ClientConfig.URL)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	for _, ca := range cas {
		roots.AddCert(ca)
	}
	d := tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	return conn.Close()
}
