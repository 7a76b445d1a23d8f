package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/controller"
	"github.com/tmplop/operator/engine/metrics"
	"github.com/tmplop/operator/test/cluster"
)

const fieldManager = "operator-e2e"

var (
	env *cluster.Cluster
	mgr *controller.Manager
	cs  kubernetes.Interface
)

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env, setup)) }

// setup installs the CRDs first (the garbage collector discovers new
// resources only every 30s, so the earlier the better) and starts the
// engine on templates/ for the whole package.
func setup(c *cluster.Cluster) (func(), error) {
	// A queue reports to the workqueue metrics installed when it is
	// created: install them before any kind starts, as `operator run` does.
	metrics.Install()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	cs = kubernetes.NewForConfigOrDie(c.Config)
	if out, err := c.Kubectl(ctx, "apply", "--server-side", "-f", filepath.Join(c.RepoRoot(), "crds"), "-f", "testdata/crds.yaml"); err != nil {
		cancel()
		return nil, fmt.Errorf("install CRDs: %w: %s", err, out)
	}
	if out, err := c.Kubectl(ctx, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"); err != nil {
		cancel()
		return nil, fmt.Errorf("CRDs not established: %w: %s", err, out)
	}
	// Every request the engine makes goes through this transport, so the
	// tests count its writes at the wire, not from its own bookkeeping.
	cfg := rest.CopyConfig(c.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &writeCounter{next: rt} })
	recorder, stopEvents, err := controller.NewEventRecorder(ctx, cfg, fieldManager)
	if err != nil {
		cancel()
		return nil, err
	}
	mgr, err = controller.NewManager(ctx, cfg, controller.Options{FieldManager: fieldManager, Recorder: recorder})
	if err != nil {
		cancel()
		return nil, err
	}
	if err := mgr.Sync(ctx, filepath.Join(c.RepoRoot(), "templates")); err != nil {
		cancel()
		return nil, err
	}
	// The test-only kinds, started one by one as a user's runtime
	// addition would be.
	for _, dir := range []string{"testdata/templates/widget", "testdata/templates/gadget"} {
		k, err := catalog.LoadKind(dir)
		if err == nil {
			err = mgr.Start(k)
		}
		if err != nil {
			cancel()
			return nil, err
		}
	}
	return func() {
		cancel()
		mgr.Wait()
		stopEvents()
	}, nil
}

var (
	memcachedGVR  = cluster.GVR("cache.example.com", "v1alpha1", "memcacheds")
	appserviceGVR = cluster.GVR("app.example.com", "v1", "appservices")
	deployGVR     = cluster.GVR("apps", "v1", "deployments")
	serviceGVR    = cluster.GVR("", "v1", "services")
)

// writes counts the engine's write requests (anything but GET, LIST, WATCH);
// writeLog keeps the last ones, to say what they were when a test fails.
var (
	writes   atomic.Int64
	writeMu  sync.Mutex
	writeLog []string
)

func lastWrites() string {
	writeMu.Lock()
	defer writeMu.Unlock()
	return strings.Join(writeLog, "\n")
}

type writeCounter struct{ next http.RoundTripper }

func (w *writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writes.Add(1)
		writeMu.Lock()
		writeLog = append(writeLog, r.Method+" "+r.URL.Path)
		if len(writeLog) > 30 {
			writeLog = writeLog[1:]
		}
		writeMu.Unlock()
	}
	return w.next.RoundTrip(r)
}
