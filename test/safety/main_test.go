package safety

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/controller"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// fieldManager is the in-process operator's; the operators the tests run
// as processes have field managers (and kinds) of their own, so that no
// two of them ever manage the same object.
const fieldManager = "safety"

// pruneDelay is the deletion guard's delay for the in-process operator:
// short, so that the tests that wait for a confirmation stay quick.
const pruneDelay = 4 * time.Second

var (
	env   *cluster.Cluster
	mgr   *controller.Manager
	proxy *harness.Proxy // every request of the in-process operator goes through it
	cs    kubernetes.Interface
)

func TestMain(m *testing.M) {
	// SAFETY_V=2 turns on the in-process operator's verbose logs.
	if v := os.Getenv("SAFETY_V"); v != "" {
		fs := flag.NewFlagSet("klog", flag.ExitOnError)
		klog.InitFlags(fs)
		_ = fs.Set("v", v)
	}
	os.Exit(cluster.Main(m, &env, setup))
}

// setup installs the test kinds and starts the in-process operator on
// testdata/templates plus the repository's appservice folder.
func setup(c *cluster.Cluster) (func(), error) {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	fail := func(err error) (func(), error) { cancel(); return nil, err }
	cs = kubernetes.NewForConfigOrDie(c.Config)
	if out, err := c.Kubectl(ctx, "apply", "--server-side", "-f", filepath.Join(c.RepoRoot(), "crds", "appservice.yaml"), "-f", "testdata/crds.yaml"); err != nil {
		return fail(fmt.Errorf("install CRDs: %w: %s", err, out))
	}
	if out, err := c.Kubectl(ctx, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"); err != nil {
		return fail(fmt.Errorf("CRDs not established: %w: %s", err, out))
	}
	var err error
	if proxy, err = harness.NewProxy(c.Config); err != nil {
		return fail(err)
	}
	recorder, stopEvents, err := controller.NewEventRecorder(ctx, proxy.Config(), fieldManager)
	if err != nil {
		return fail(err)
	}
	mgr, err = controller.NewManager(ctx, proxy.Config(), controller.Options{
		FieldManager: fieldManager, Recorder: recorder, PruneConfirmDelay: pruneDelay,
	})
	if err != nil {
		return fail(err)
	}
	if err := mgr.Sync(ctx, "testdata/templates"); err != nil {
		return fail(err)
	}
	k, err := catalog.LoadKind(filepath.Join(c.RepoRoot(), "templates", "appservice"))
	if err == nil {
		err = mgr.Start(k)
	}
	if err != nil {
		return fail(err)
	}
	return func() {
		cancel()
		mgr.Wait()
		stopEvents()
		_ = proxy.Close()
	}, nil
}

// safetyGVR is a test kind's resource.
func safetyGVR(resource string) schema.GroupVersionResource {
	return cluster.GVR("safety.tmplop.io", "v1", resource)
}

var (
	configMapGVR  = cluster.GVR("", "v1", "configmaps")
	deployGVR     = cluster.GVR("apps", "v1", "deployments")
	appserviceGVR = cluster.GVR("app.example.com", "v1", "appservices")
	randomGK      = schema.GroupKind{Group: "safety.tmplop.io", Kind: "Random"}
)

// writesTo counts the in-process operator's write requests since mark
// whose path ends with suffix (e.g. "/configmaps/x").
func writesTo(mark time.Time, suffix string) int {
	return proxy.Count(func(r harness.Request) bool {
		return harness.IsWrite(r) && !r.Time.Before(mark) && strings.HasSuffix(r.Path, suffix)
	})
}

// writesSince lists the write requests since mark, for failure messages.
func writesSince(mark time.Time) string {
	var out []string
	for _, r := range proxy.Requests() {
		if harness.IsWrite(r) && !r.Time.Before(mark) {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return strings.Join(out, "\n")
}
