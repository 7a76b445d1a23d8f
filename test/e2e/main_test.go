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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/controller"
	"github.com/tmplop/operator/engine/metrics"
	"github.com/tmplop/operator/test/cluster"
)

const fieldManager = "operator-e2e"

var (
	env *cluster.Cluster
	mgr *controller.Manager
	dyn dynamic.Interface
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
	dyn = dynamic.NewForConfigOrDie(c.Config)
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

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

var (
	memcachedGVR  = gvr("cache.example.com", "v1alpha1", "memcacheds")
	appserviceGVR = gvr("app.example.com", "v1", "appservices")
	deployGVR     = gvr("apps", "v1", "deployments")
	serviceGVR    = gvr("", "v1", "services")
)

// create creates the object in YAML in ns.
func create(t *testing.T, res schema.GroupVersionResource, ns, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Resource(res).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", u.GetName(), err)
	}
	return got
}

func get(ctx context.Context, res schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	return dyn.Resource(res).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
}

// condition returns the status and reason of a condition of obj.
func condition(obj *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", ""
}

func waitGone(t *testing.T, res schema.GroupVersionResource, ns, name string, timeout time.Duration) {
	t.Helper()
	cluster.Eventually(t, timeout, fmt.Sprintf("%s %s/%s gone", res.Resource, ns, name), func(ctx context.Context) (bool, error) {
		_, err := get(ctx, res, ns, name)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

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
