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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

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
	dyn   dynamic.Interface
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
	dyn = dynamic.NewForConfigOrDie(c.Config)
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

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// safetyGVR is a test kind's resource.
func safetyGVR(resource string) schema.GroupVersionResource {
	return gvr("safety.tmplop.io", "v1", resource)
}

var (
	configMapGVR  = gvr("", "v1", "configmaps")
	deployGVR     = gvr("apps", "v1", "deployments")
	appserviceGVR = gvr("app.example.com", "v1", "appservices")
	randomGK      = schema.GroupKind{Group: "safety.tmplop.io", Kind: "Random"}
)

// create creates the object in YAML in ns ("" for cluster-scoped).
func create(t *testing.T, res schema.GroupVersionResource, ns, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	got, err := resource(res, ns).Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s: %v", res.Resource, u.GetName(), err)
	}
	return got
}

func resource(res schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return dyn.Resource(res)
	}
	return dyn.Resource(res).Namespace(ns)
}

func get(ctx context.Context, res schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	return resource(res, ns).Get(ctx, name, metav1.GetOptions{})
}

func exists(t *testing.T, res schema.GroupVersionResource, ns, name string) bool {
	t.Helper()
	_, err := get(t.Context(), res, ns, name)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func patch(t *testing.T, res schema.GroupVersionResource, ns, name, mergePatch string) {
	t.Helper()
	if _, err := resource(res, ns).Patch(t.Context(), name, types.MergePatchType, []byte(mergePatch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch %s %s: %v", res.Resource, name, err)
	}
}

// condition returns a condition of obj.
func condition(obj *unstructured.Unstructured, typ string) (status, reason, message string, found bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"]), true
		}
	}
	return "", "", "", false
}

// waitCondition waits for a condition of the object with status and
// reason whose message holds fragment, at the object's generation.
func waitCondition(t *testing.T, res schema.GroupVersionResource, ns, name, typ, status, reason, fragment string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	cluster.Eventually(t, timeout, fmt.Sprintf("%s %s: %s=%s %s mentioning %q", res.Resource, name, typ, status, reason, fragment), func(ctx context.Context) (bool, error) {
		o, err := get(ctx, res, ns, name)
		if err != nil {
			return false, err
		}
		last = o
		st, rs, msg, _ := condition(o, typ)
		if st == status && rs == reason && strings.Contains(msg, fragment) {
			return true, nil
		}
		return false, fmt.Errorf("now %s=%s %s: %s", typ, st, rs, msg)
	})
	return last
}

// reconciled waits for Reconciled=True at the object's generation.
func reconciled(t *testing.T, res schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return waitCondition(t, res, ns, name, "Reconciled", "True", "Reconciled", "", 30*time.Second)
}

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
