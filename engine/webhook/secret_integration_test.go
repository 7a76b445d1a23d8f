package webhook

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/test/cluster"
)

// The Secret's tests run on a control plane of their own (etcd and
// kube-apiserver: a Secret needs nothing else), started by the first test
// that needs it, so that the package's unit tests and benchmarks run
// without one.
var plane cluster.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	plane.Stop()
	os.Exit(code)
}

func controlPlane(t *testing.T) *cluster.Cluster {
	t.Helper()
	return plane.Get(t)
}

// namespace makes a namespace of the test's own on the plane.
func namespace(t *testing.T, env *cluster.Cluster, name string) corev1client.CoreV1Interface {
	t.Helper()
	core, err := corev1client.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return core
}

// TestSecretSharedByReplicas: two replicas started at once, each with a
// client of its own, race to create the Secret; both serve the one chain
// (same CA bundle, same certificate). Then one replica, whose clock says
// the serving certificate is due, renews it: the other serves the renewed
// certificate as soon as its watch delivers it, and clients calling both
// all along, each verifying against the bundle of the replica it calls,
// never fail a handshake.
func TestSecretSharedByReplicas(t *testing.T) {
	env := controlPlane(t)
	const ns = "webhook-shared"
	core := namespace(t, env, ns)

	var ahead atomic.Int64 // how far replica A's clock is ahead
	start := func(name string, now func() time.Time) (*Server, error) {
		c, err := kube.New(env.Config, "tmplop-operator")
		if err != nil {
			return nil, err
		}
		opts := secretOptions(c, ns, time.Hour)
		opts.CAValidity, opts.CAPropagation = 10*time.Hour, time.Second
		opts.skewSet, opts.now = false, now // back-dated by an hour: A's clock may run ahead
		ctx := klogContext(t, name)
		s, err := Serve(ctx, opts)
		if err == nil {
			t.Cleanup(s.Stop)
		}
		return s, err
	}
	var a, b *Server
	var errA, errB error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		a, errA = start("a", func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) })
	}()
	go func() { defer wg.Done(); b, errB = start("b", time.Now) }()
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("serve: %v, %v", errA, errB)
	}
	if !bytes.Equal(a.CABundle(), b.CABundle()) {
		t.Fatal("the replicas serve different CA bundles")
	}
	first := servedSerial(t, a)
	if got := servedSerial(t, b); got != first {
		t.Fatalf("the replicas serve certificates %s and %s", first, got)
	}
	secret, err := core.Secrets(ns).Get(t.Context(), "operator-webhook-cert", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if secret.Type != corev1.SecretTypeTLS || !bytes.Equal(secret.Data[SecretCAKey], a.CABundle()) || len(secret.Data[SecretCAKeyKey]) == 0 {
		t.Fatalf("Secret of type %s, keys %v", secret.Type, keys(secret.Data))
	}

	stop := make(chan struct{})
	h := startHammer(t, stop, a, b)
	time.Sleep(500 * time.Millisecond)
	// A's clock 41 minutes ahead: in the last third of the hour the
	// certificate is valid (B's clock: 19 minutes into it, not due).
	ahead.Store(int64(41 * time.Minute))
	a.keeper.poke()
	deadline := time.Now().Add(20 * time.Second)
	for servedSerial(t, a) == first || servedSerial(t, b) == first {
		if time.Now().After(deadline) {
			t.Fatalf("after A's renewal: A serves %s, B %s (first %s)", servedSerial(t, a), servedSerial(t, b), first)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	close(stop)
	h.wg.Wait()
	renewed := servedSerial(t, a)
	if got := servedSerial(t, b); got != renewed {
		t.Errorf("after the renewal the replicas serve %s and %s", renewed, got)
	}
	if !bytes.Equal(a.CABundle(), b.CABundle()) {
		t.Error("a renewal of the serving certificate changed the CA bundle of one replica")
	}
	t.Logf("%d calls, %d failures, certificates %v", h.calls.Load(), h.failures.Load(), keysBool(h.serials))
	if h.failures.Load() != 0 {
		t.Errorf("%d of %d calls failed: %v", h.failures.Load(), h.calls.Load(), h.errs[:min(3, len(h.errs))])
	}
	if !h.serials[first] || !h.serials[renewed] {
		t.Errorf("the calls saw %v, want both %s and %s", keysBool(h.serials), first, renewed)
	}
}

// servedSerial is the serial of the certificate s serves now.
func servedSerial(t *testing.T, s *Server) string {
	t.Helper()
	c := s.keeper.current.Load()
	b, _ := pem.Decode(c.data[SecretCertKey])
	x, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return x.SerialNumber.Text(16)
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func keysBool(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func klogContext(t *testing.T, replica string) context.Context {
	return klogWith(t.Context(), "replica", replica)
}

func klogWith(ctx context.Context, kv ...any) context.Context {
	return klog.NewContext(ctx, klog.FromContext(ctx).WithValues(kv...))
}
