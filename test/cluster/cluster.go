package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is a running control plane.
type Cluster struct {
	// Config is an admin (system:masters) client config.
	Config *rest.Config
	// Kubeconfig is the path of the admin kubeconfig file.
	Kubeconfig string
	// Bin is the folder holding the control plane's binaries, kubectl among them.
	Bin string

	runDir string // empty when the cluster is shared and not ours to stop
	root   string
	// The admin's clients, on Config, for the helpers of objects.go.
	dyn dynamic.Interface
	cs  kubernetes.Interface
}

// Main starts (or reuses) a control plane, runs each setup (which may
// return a teardown), runs the package's tests and stops what it started.
// It returns the exit code for os.Exit.
func Main(m *testing.M, env **Cluster, setups ...func(*Cluster) (func(), error)) int {
	c, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test cluster:", err)
		return 1
	}
	*env = c
	defer c.Stop()
	for _, setup := range setups {
		teardown, err := setup(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, "test setup:", err)
			return 1
		}
		defer teardown()
	}
	return m.Run()
}

// Options choose the control plane StartWith starts.
type Options struct {
	// Minimal starts only etcd and kube-apiserver, with API Priority and
	// Fairness on as in a real cluster: no controllers, no scheduler, no
	// Node, so nothing but the caller's clients sends requests (the
	// benchmark's plane). It is always a new plane of the caller's own,
	// never the shared one of `make cluster-up`.
	Minimal bool
}

// Start returns the control plane of `make cluster-up` when KUBECONFIG points
// at it, or starts a new one for the calling process on free loopback ports.
func Start() (*Cluster, error) { return StartWith(Options{}) }

// StartWith is Start with options; see Options for what each changes.
func StartWith(opts Options) (*Cluster, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	c := &Cluster{root: root, Bin: filepath.Join(root, "hack", "cluster", "bin")}
	shared := filepath.Join(root, "hack", "cluster", ".run", "kubeconfig")
	if kc := os.Getenv("KUBECONFIG"); !opts.Minimal && kc != "" && samePath(kc, shared) {
		c.Kubeconfig = shared
	} else {
		if err := c.up(opts); err != nil {
			return nil, err
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("load kubeconfig %s: %w", c.Kubeconfig, err)
	}
	// Tests create many objects quickly; client-go's default of 5 QPS would
	// make them measure the client's rate limiter, not the system under test.
	cfg.QPS, cfg.Burst = 200, 400
	c.Config = cfg
	if c.dyn, err = dynamic.NewForConfig(cfg); err == nil {
		c.cs, err = kubernetes.NewForConfig(cfg)
	}
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("clients of %s: %w", c.Kubeconfig, err)
	}
	return c, nil
}

func (c *Cluster) up(opts Options) error {
	dir, err := os.MkdirTemp("", "testcluster-")
	if err != nil {
		return err
	}
	addrs, err := FreeAddrs(3)
	if err != nil {
		return err
	}
	port := func(i int) string { _, p, _ := net.SplitHostPort(addrs[i]); return p }
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(c.root, "hack", "cluster", "scripts", "up.sh"), dir)
	cmd.Env = append(os.Environ(),
		"CLUSTER_APISERVER_PORT="+port(0),
		"CLUSTER_ETCD_PORT="+port(1),
		"CLUSTER_ETCD_PEER_PORT="+port(2),
		"CLUSTER_OWNER_PID="+strconv.Itoa(os.Getpid()),
	)
	if opts.Minimal {
		cmd.Env = append(cmd.Env, "CLUSTER_MINIMAL=1")
	} else {
		// An inherited CLUSTER_MINIMAL must not make Start's plane minimal.
		cmd.Env = append(cmd.Env, "CLUSTER_MINIMAL=")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("start control plane (is it built? run 'make cluster-bin'): %w\n%s", err, out)
	}
	c.runDir = dir
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	return nil
}

// Stop stops a control plane this process started; a shared one is left running.
func (c *Cluster) Stop() {
	if c == nil || c.runDir == "" {
		return
	}
	cmd := exec.Command("bash", filepath.Join(c.root, "hack", "cluster", "scripts", "down.sh"), c.runDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "test cluster: stop: %v\n%s", err, out)
		return
	}
	_ = os.RemoveAll(c.runDir)
	c.runDir = ""
}

// Kubectl runs the control plane's kubectl against it and returns its
// combined output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.Bin, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// RepoRoot is the root of this repository (the folder of the main go.mod).
func (c *Cluster) RepoRoot() string { return c.root }

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "cluster", "scripts", "up.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root not found above the working directory")
		}
		dir = parent
	}
}

func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// FreeAddrs asks the kernel for n free loopback addresses (127.0.0.1:port),
// for the control plane's ports and the operator's listeners. Another
// process could take one before it is bound; the binder then fails loudly.
func FreeAddrs(n int) ([]string, error) {
	var addrs []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}
