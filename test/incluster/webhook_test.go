package incluster

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
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/test/cluster"
)

// webhookSecret is the Secret the operator keeps the webhook's chain in
// (engine/webhook.DefaultSecretName), which deploy/rbac.yaml grants by name.
const webhookSecret = "operator-webhook-cert"

var (
	gaugesV1       = cluster.GVR("incluster.tmplop.io", "v1", "gauges")
	gaugesV1alpha1 = cluster.GVR("incluster.tmplop.io", "v1alpha1", "gauges")
)

// testWebhook: both replicas, leader and standby, serve the conversion
// webhook with the chain that one of them made and keeps in the Secret
// deploy/'s RBAC grants, under the Service's name; and the API server,
// calling the CRD's Service as `operator crd` writes it, converts a kind of
// two versions delivered as a ConfigMap through the standby.
//
// deploy/'s Service operator-webhook is a ClusterIP Service, and a
// ClusterIP leads nowhere here: the replicas are processes on this machine,
// with no Pod network and no kube-proxy. For this test an ExternalName
// Service of the same name stands in for it, naming the standby's loopback
// address: kube-apiserver resolves a webhook's Service to its ExternalName
// and the CRD's port (there is no targetPort), and verifies the
// certificate for operator-webhook.operator-system.svc, as it does through
// a ClusterIP. What deploy/'s own Service selects and targets is checked by
// cmd/operator/app's TestDeployWebhook and the dry run of deploy/.
func testWebhook(t *testing.T) {
	ctx := t.Context()
	lead, standby := leader(t)

	// The chain, made once, by whichever replica came first.
	var secret *corev1.Secret
	cluster.Eventually(t, 30*time.Second, "Secret "+webhookSecret+" holds the webhook's chain", func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, webhookSecret, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		secret = s
		return len(s.Data["ca.crt"]) > 0 && len(s.Data["tls.crt"]) > 0, nil
	})
	caBundle := secret.Data["ca.crt"]
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		t.Fatalf("Secret %s: ca.crt holds no certificate", webhookSecret)
	}
	serverName := webhookService + "." + ns + ".svc"
	tlsConfig := &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}

	// Every replica serves that chain, verified as the API server does.
	var leaves [][]byte
	for _, r := range []*replica{lead, standby} {
		cluster.Eventually(t, 30*time.Second, "the replica at "+r.webhook+" serves the Secret's certificate for "+serverName, func(ctx context.Context) (bool, error) {
			d := tls.Dialer{Config: tlsConfig}
			conn, err := d.DialContext(ctx, "tcp", r.webhook)
			if err != nil {
				return false, err
			}
			defer conn.Close()
			leaves = append(leaves, conn.(*tls.Conn).ConnectionState().PeerCertificates[0].Raw)
			return true, nil
		})
	}
	if !bytes.Equal(leaves[0], leaves[1]) {
		t.Errorf("the leader and the standby serve different certificates")
	}

	// The kind's CRD as `operator crd` writes it: its clientConfig is
	// deploy/'s Service. The CA goes in as cert-manager's cainjector (or
	// --install-crds) puts it; the port is the replicas' (an ExternalName
	// Service has no targetPort).
	out, err := exec.Command(bin, "crd", "--templates", "testdata/versions/gauge").Output()
	if err != nil {
		t.Fatalf("operator crd: %v: %s", err, stderrOf(err))
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(out, &crd); err != nil {
		t.Fatal(err)
	}
	cc := crd.Spec.Conversion.Webhook.ClientConfig
	if cc.Service == nil || cc.Service.Namespace != ns || cc.Service.Name != webhookService {
		t.Fatalf("operator crd's clientConfig %+v is not deploy/'s Service %s/%s", cc, ns, webhookService)
	}
	port, _ := net.LookupPort("tcp", webhookPort)
	cc.Service.Port = ptrTo(int32(port))
	cc.CABundle = caBundle
	// Not t.TempDir(): kubectl -f splits a path at its commas, which the
	// subtest's name has.
	crdDir, err := os.MkdirTemp("", "incluster-gauge-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(crdDir) })
	crdFile := filepath.Join(crdDir, "gauges.yaml")
	data, _ := yaml.Marshal(&crd)
	if err := os.WriteFile(crdFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "--server-side", "-f", crdFile)
	t.Cleanup(func() { _, _ = env.Kubectl(context.Background(), "delete", "--ignore-not-found", "-f", crdFile) })
	kubectl(t, "wait", "--for=condition=Established", "crd/"+crd.Name, "--timeout=30s")

	// The stand-in for deploy/'s Service, to the standby.
	svcs := cs.CoreV1().Services(ns)
	orig, err := svcs.Get(ctx, webhookService, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("deploy/'s Service %s: %v", webhookService, err)
	}
	if err := svcs.Delete(ctx, webhookService, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	standbyHost, _, _ := net.SplitHostPort(standby.webhook)
	if _, err := svcs.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: webhookService, Namespace: ns},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: standbyHost},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the ExternalName Service to the standby: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = svcs.Delete(ctx, webhookService, metav1.DeleteOptions{})
		back := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: orig.Name, Namespace: orig.Namespace, Labels: orig.Labels}, Spec: orig.Spec}
		back.Spec.ClusterIP, back.Spec.ClusterIPs = "", nil
		if _, err := svcs.Create(ctx, back, metav1.CreateOptions{}); err != nil {
			t.Errorf("restore deploy/'s Service %s: %v", webhookService, err)
		}
	})

	// The kind's own account and role, as `operator rbac` makes them, and
	// nothing of the operator's: its right on the webhook's Secret must be
	// deploy/'s (rbac --webhook), which the operator used at start.
	applyKindRBAC(t, "testdata/versions")

	// The folder, as deploy/ delivers folders.
	cms := cs.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, folderConfigMap(t, "testdata/versions/gauge", "gauge"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), "gauge", metav1.DeleteOptions{}) })
	waitEvent(t, "gauge", "KindStarted")

	// Written at v1alpha1, stored at v1: the API server converts through
	// the standby, and the leader reconciles the object at the hub.
	testNS := env.Namespace(t)
	before := metricSum(t, standby, "operator_conversion_objects_total")
	cluster.Eventually(t, 30*time.Second, "a Gauge is created at v1alpha1", func(ctx context.Context) (bool, error) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "incluster.tmplop.io/v1alpha1", "kind": "Gauge",
			"metadata": map[string]any{"name": "g1", "namespace": testNS},
			"spec":     map[string]any{"size": int64(3)},
		}}
		_, err := env.Resource(gaugesV1alpha1, testNS).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Logf("create at v1alpha1: %v", err)
		}
		return err == nil, nil
	})
	for _, read := range []struct {
		version string
		field   string
	}{{"v1", "replicas"}, {"v1alpha1", "size"}} {
		res := gaugesV1
		if read.version == "v1alpha1" {
			res = gaugesV1alpha1
		}
		u, err := env.Get(ctx, res, testNS, "g1")
		if err != nil {
			t.Fatalf("read Gauge g1 at %s: %v", read.version, err)
		}
		spec, _, _ := unstructured.NestedMap(u.Object, "spec")
		if len(spec) != 1 || spec[read.field] != int64(3) {
			t.Errorf("Gauge g1 at %s: spec %v, want {%s: 3}", read.version, spec, read.field)
		}
	}
	waitChildData(t, testNS, "g1-gauge", "replicas", "3")
	if after := metricSum(t, standby, "operator_conversion_objects_total"); after <= before {
		t.Errorf("the standby's operator_conversion_objects_total went from %v to %v: the API server's conversions did not reach it", before, after)
	} else {
		t.Logf("the standby converted %v objects for the API server", after-before)
	}

	// The leader serves the webhook as well: a ConversionReview sent to it
	// directly, over TLS verified for the Service's name.
	review := fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u1","desiredAPIVersion":"incluster.tmplop.io/v1",
		"objects":[{"apiVersion":"incluster.tmplop.io/v1alpha1","kind":"Gauge","metadata":{"name":"g2","namespace":%q,"uid":"g2"},"spec":{"size":5}}]}}`, testNS)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	resp, err := client.Post("https://"+lead.webhook+"/convert", "application/json", bytes.NewBufferString(review))
	if err != nil {
		t.Fatalf("ConversionReview to the leader: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got apiextensionsv1.ConversionReview
	if err := json.Unmarshal(body, &got); err != nil || got.Response == nil {
		t.Fatalf("ConversionReview to the leader: %d %s (%v)", resp.StatusCode, body, err)
	}
	if got.Response.Result.Status != metav1.StatusSuccess || len(got.Response.ConvertedObjects) != 1 {
		t.Fatalf("ConversionReview to the leader: %s", body)
	}
	var obj map[string]any
	if err := json.Unmarshal(got.Response.ConvertedObjects[0].Raw, &obj); err != nil {
		t.Fatal(err)
	}
	if spec, _ := obj["spec"].(map[string]any); obj["apiVersion"] != "incluster.tmplop.io/v1" || spec["replicas"] != float64(5) {
		t.Errorf("the leader converted g2 to %v, want incluster.tmplop.io/v1 with spec.replicas 5", obj)
	}
}

func kubectl(t *testing.T, args ...string) {
	t.Helper()
	if out, err := env.Kubectl(t.Context(), args...); err != nil {
		t.Fatalf("kubectl %v: %v: %s", args, err, out)
	}
}

func ptrTo[T any](v T) *T { return &v }

// applyKindRBAC applies what `operator rbac` generates for the folders of
// dir (the kinds' accounts, and the operator's right to impersonate them)
// but the operator's rules on Secrets: for a folder of several versions
// they grant the webhook's Secret, which would hide what deploy/ grants.
func applyKindRBAC(t *testing.T, dir string) {
	t.Helper()
	const name = "incluster-versions"
	out, err := exec.Command(bin, "rbac", "--templates", dir, "--name", name, "--namespace", ns,
		"--service-account", serviceAccount, "--default-service-account", defaultAccount).Output()
	if err != nil {
		t.Fatalf("operator rbac: %v: %s", err, stderrOf(err))
	}
	var docs []string
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || u.Object == nil {
			continue
		}
		if !strings.HasPrefix(u.GetName(), name) {
			// deploy/'s own (the default account, the inventory), which
			// the cleanup must not delete.
			continue
		}
		if u.GetName() == name && (u.GetKind() == "Role" || u.GetKind() == "ClusterRole") {
			// The operator's: impersonate the kind's account, yes; the
			// webhook's Secret, no.
			rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
			kept := rules[:0]
			for _, r := range rules {
				res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
				if !slices.Contains(res, "secrets") {
					kept = append(kept, r)
				}
			}
			_ = unstructured.SetNestedSlice(u.Object, kept, "rules")
			b, _ := yaml.Marshal(u.Object)
			doc = string(b)
		}
		docs = append(docs, doc)
	}
	if len(docs) == 0 {
		t.Fatalf("operator rbac made no kind account for %s:\n%s", dir, out)
	}
	dirFile, err := os.MkdirTemp("", "incluster-rbac-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dirFile) })
	path := filepath.Join(dirFile, "rbac.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "--server-side", "-f", path)
	t.Cleanup(func() { _, _ = env.Kubectl(context.Background(), "delete", "--ignore-not-found", "-f", path) })
}
