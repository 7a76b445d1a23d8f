package incluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

const (
	// ns and serviceAccount are deploy/'s.
	ns             = "operator-system"
	serviceAccount = "operator"
	// defaultAccount is deploy/'s run --default-service-account.
	defaultAccount = "operator-kinds"
	folderLabel    = "operator.tmplop.io/kind-folder"
	// The test replicas' leases are short, so that failover is quick to
	// test; deploy/ keeps client-go's defaults (15 s, 10 s, 2 s).
	leaseDuration = 6 * time.Second
)

var (
	env *cluster.Cluster
	cs  kubernetes.Interface
	bin string
	// saKubeconfig authenticates as deploy/'s ServiceAccount.
	saKubeconfig string
	saConfig     *rest.Config
	// scraperToken authenticates an account bound to deploy/'s
	// operator-metrics-reader, as a Prometheus' would be.
	scraperToken string
	// replicas are the two operator processes, as deploy/ runs them,
	// started by TestInCluster.
	replicas [2]*replica
	// webhookPort is the port every replica's conversion webhook binds, as
	// in deploy/ (:9443), each on a loopback address of its own
	// (127.0.0.N: Linux routes all of 127/8 to lo), as Pods have an IP
	// each, so that a Service can name one replica by its address alone.
	webhookPort string
	// webhookHosts counts the loopback addresses handed out.
	webhookHosts atomic.Int32
)

// webhookService is deploy/'s --webhook-service (deploy/operator.yaml).
const webhookService = "operator-webhook"

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env, setup)) }

// setup applies deploy/ and the examples' CRDs and kind folders, and
// builds the operator.
func setup(c *cluster.Cluster) (func(), error) {
	ctx := context.Background()
	cs = kubernetes.NewForConfigOrDie(c.Config)
	var err error
	if bin, err = harness.BuildOperator(c.RepoRoot()); err != nil {
		return nil, err
	}
	addrs, err := cluster.FreeAddrs(1)
	if err != nil {
		return nil, err
	}
	if _, webhookPort, err = net.SplitHostPort(addrs[0]); err != nil {
		return nil, err
	}
	root := c.RepoRoot()
	steps := [][]string{
		{"apply", "--server-side", "-k", filepath.Join(root, "deploy")},
		{"apply", "--server-side", "-f", filepath.Join(root, "crds"), "-f", "testdata/crds"},
		{"wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"},
		{"apply", "--server-side", "-k", filepath.Join(root, "deploy", "examples")},
		// The Deployment's Pods would only be kwok's stand-ins; the
		// replicas of these tests are processes on this machine.
		{"scale", "-n", ns, "deployment/operator", "--replicas=0"},
	}
	for _, s := range steps {
		if out, err := c.Kubectl(ctx, s...); err != nil {
			return nil, fmt.Errorf("kubectl %s: %w: %s", strings.Join(s, " "), err, out)
		}
	}
	dir, err := os.MkdirTemp("", "incluster-")
	if err != nil {
		return nil, err
	}
	saKubeconfig = filepath.Join(dir, "kubeconfig")
	if saConfig, err = serviceAccountConfig(ctx, c, saKubeconfig); err != nil {
		return nil, err
	}
	if scraperToken, err = accountToken(ctx, c, "metrics-scraper", "operator-metrics-reader"); err != nil {
		return nil, err
	}
	return func() { _ = os.RemoveAll(dir) }, nil
}

// accountToken creates a ServiceAccount of ns, bound to clusterRole unless
// it is "", and returns a token of it.
func accountToken(ctx context.Context, c *cluster.Cluster, name, clusterRole string) (string, error) {
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if clusterRole != "" {
		if out, err := c.Kubectl(ctx, "create", "clusterrolebinding", name, "--clusterrole="+clusterRole, "--serviceaccount="+ns+":"+name); err != nil && !strings.Contains(out, "AlreadyExists") {
			return "", fmt.Errorf("bind %s to %s: %w: %s", name, clusterRole, err, out)
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token of %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, nil
}

// serviceAccountConfig writes a kubeconfig that authenticates with a
// TokenRequest token of deploy/'s ServiceAccount, as a Pod's projected
// token does.
func serviceAccountConfig(ctx context.Context, c *cluster.Cluster, path string) (*rest.Config, error) {
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, serviceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token of %s/%s: %w", ns, serviceAccount, err)
	}
	admin, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = cluster
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["operator"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "operator", Namespace: ns}
	kc.CurrentContext = "operator"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return nil, err
	}
	return clientcmd.BuildConfigFromFlags("", path)
}

// replica is one operator process, with its HTTP endpoints.
type replica struct {
	*harness.Operator
	metrics, health string // host:port
	webhook         string // host:port, host a loopback address of its own
}

// webhookArgs are deploy/'s webhook flags, bound to a new loopback address
// on webhookPort.
func webhookArgs() (addr string, args []string) {
	addr = net.JoinHostPort(fmt.Sprintf("127.0.0.%d", webhookHosts.Add(1)), webhookPort)
	return addr, []string{"--webhook-bind-address", addr, "--webhook-service", ns + "/" + webhookService + ":443"}
}

// startReplica runs the operator as deploy/ does (ConfigMap folders, leader
// election, the conversion webhook), authenticated as deploy/'s
// ServiceAccount.
func startReplica(t *testing.T, extra ...string) *replica {
	t.Helper()
	addrs, err := cluster.FreeAddrs(2)
	if err != nil {
		t.Fatal(err)
	}
	webhook, webhookFlags := webhookArgs()
	r := &replica{metrics: addrs[0], health: addrs[1], webhook: webhook}
	args := append([]string{"run", "--kubeconfig", saKubeconfig,
		"--configmap-selector", folderLabel + "=true",
		"--default-service-account", defaultAccount,
		"--leader-elect",
		"--leader-elect-lease-duration", leaseDuration.String(),
		"--leader-elect-renew-deadline", (leaseDuration * 2 / 3).String(),
		"--leader-elect-retry-period", "500ms",
		"--metrics-bind-address", r.metrics, "--health-probe-bind-address", r.health,
		"-v", "1"}, append(webhookFlags, extra...)...)
	r.Operator = harness.StartOperator(t, bin, args...)
	return r
}

// kubectlAs runs the control plane's kubectl with the ServiceAccount's
// kubeconfig.
func kubectlAs(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(env.Bin, "kubectl"), append([]string{"--kubeconfig", saKubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// folderConfigMap is a kind folder of testdata as the ConfigMap that
// delivers it.
func folderConfigMap(t *testing.T, dir, name string) *corev1.ConfigMap {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{folderLabel: "true"}},
		Data:       map[string]string{},
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[e.Name()] = string(data)
	}
	return cm
}
