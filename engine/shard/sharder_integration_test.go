package shard_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/shard"
	"github.com/tmplop/operator/test/cluster"
)

// testRunLabel marks the ConfigMaps of one test (its namespace as the
// value): the sharder lists and watches ConfigMaps in all namespaces, and
// must ignore the other tests' and the control plane's own.
const testRunLabel = "shard-test.tmplop.io/run"

// countingResource is a Resource confined to one test's objects (its
// label joined to every selector the sharder sends) that counts the
// patches sent per object.
type countingResource struct {
	shard.Resource
	run string

	mu      sync.Mutex
	patches map[string]int // by namespace/name
}

func (r *countingResource) confine(o metav1.ListOptions) metav1.ListOptions {
	sel := testRunLabel + "=" + r.run
	if o.LabelSelector != "" {
		sel = o.LabelSelector + "," + sel
	}
	o.LabelSelector = sel
	return o
}

func (r *countingResource) List(ctx context.Context, o metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return r.Resource.List(ctx, r.confine(o))
}

func (r *countingResource) Watch(ctx context.Context, o metav1.ListOptions) (apiwatch.Interface, error) {
	return r.Resource.Watch(ctx, r.confine(o))
}

func (r *countingResource) Patch(ctx context.Context, namespace, name string, patch []byte) error {
	r.mu.Lock()
	r.patches[namespace+"/"+name]++
	r.mu.Unlock()
	return r.Resource.Patch(ctx, namespace, name, patch)
}

func (r *countingResource) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.patches[name]
}

// held lists the test's ConfigMaps by the shard that holds them ("" for
// none), with their resourceVersions.
func held(t *testing.T, cms corev1client.ConfigMapInterface, run string) map[string]map[string]string {
	t.Helper()
	l, err := cms.List(t.Context(), metav1.ListOptions{LabelSelector: testRunLabel + "=" + run})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]map[string]string{}
	for _, cm := range l.Items {
		s := cm.Labels[shard.ShardLabel]
		if by[s] == nil {
			by[s] = map[string]string{}
		}
		by[s][cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return by
}

// TestSharder: two shards and the sharder on a real control plane, with
// ConfigMaps as the sharded objects. New objects are assigned with one
// write each; a crashed shard's objects move to the survivor with one
// write each, and the survivor's are not written; a hand-over on a stale
// version changes nothing.
func TestSharder(t *testing.T) {
	const n = 300
	env := controlPlane(t)
	ns := env.Namespace(t)
	leases := leasesClient(t, env.Config)
	core, err := corev1client.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cms := core.ConfigMaps(ns)
	door, err := kube.New(env.Config, "operator")
	if err != nil {
		t.Fatal(err)
	}
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	res := &countingResource{Resource: shard.MetadataResource(door, gvr, "", ""), run: ns, patches: map[string]int{}}

	crashCtx, crash := context.WithCancel(t.Context())
	a := join(t, crashCtx, leases, ns, "a")
	join(t, t.Context(), leases, ns, "b")
	members := watch(t, leases, ns)
	waitLive(t, members, 5*time.Second, "a", "b")
	sharder := shard.NewSharder(res, members, "", "ConfigMap")
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sharder.Run(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	create := func(ctx context.Context, name string) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{testRunLabel: ns}}}, metav1.CreateOptions{})
		return err
	}
	start := time.Now()
	names := make(chan string)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for name := range names {
				errs <- create(t.Context(), name)
			}
		})
	}
	for i := range n {
		names <- fmt.Sprintf("cm-%03d", i)
	}
	close(names)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	created := time.Since(start)
	cluster.Eventually(t, 10*time.Second, "every object labelled with a live shard", func(context.Context) (bool, error) {
		by := held(t, cms, ns)
		return len(by["a"])+len(by["b"]) == n, nil
	})
	assigned := time.Since(start)
	by := held(t, cms, ns)
	if assigned-created > 5*time.Second {
		t.Errorf("the last object labelled %s after the last was created; want a few seconds at most", assigned-created)
	}
	for _, s := range []string{"a", "b"} {
		for name := range by[s] {
			if c := res.count(name); c != 1 {
				t.Errorf("%s: %d patches; want 1", name, c)
			}
		}
	}
	// The times are those of a poll every 100 ms.
	t.Logf("%d objects created in %s, all labelled after %s (%s after the last was created): a %d, b %d; 1 patch each",
		n, created.Round(time.Millisecond), assigned.Round(time.Millisecond), (assigned - created).Round(time.Millisecond), len(by["a"]), len(by["b"]))

	// One created while the sharder runs: through its watch.
	start = time.Now()
	if err := create(t.Context(), "late"); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, time.Second, "a new object labelled within 1 s", func(ctx context.Context) (bool, error) {
		cm, err := cms.Get(ctx, "late", metav1.GetOptions{})
		return err == nil && cm.Labels[shard.ShardLabel] != "", err
	})
	t.Logf("an object created later labelled after %s", time.Since(start).Round(time.Millisecond))

	// a crashes: its Lease stays, unrenewed.
	before := held(t, cms, ns)
	crash()
	<-a.Context().Done()
	start = time.Now()
	cluster.Eventually(t, leaseDuration+2*time.Second, "a's objects moved to b", func(context.Context) (bool, error) {
		by := held(t, cms, ns)
		return len(by["a"]) == 0 && len(by["b"]) == n+1, nil
	})
	moved := time.Since(start)
	after := held(t, cms, ns)
	for name := range before["a"] {
		if c := res.count(name); c != 2 {
			t.Errorf("%s: %d patches; want 2 (assigned, then moved)", name, c)
		}
	}
	for name, rv := range before["b"] {
		if after["b"][name] != rv {
			t.Errorf("%s, held by the survivor, was written: resourceVersion %s, then %s", name, rv, after["b"][name])
		}
		if c := res.count(name); c != 1 {
			t.Errorf("%s, held by the survivor: %d patches; want 1", name, c)
		}
	}
	stats := sharder.Stats()
	if stats.Assigned != n+1 || stats.Reassigned != uint64(len(before["a"])) {
		t.Errorf("stats %+v; want %d assigned, %d reassigned", stats, n+1, len(before["a"]))
	}
	t.Logf("a crashed; its %d objects were on b %s later (lease duration %s), 1 patch each; b's %d not written; stats %+v",
		len(before["a"]), moved.Round(time.Millisecond), leaseDuration, len(before["b"]), stats)

	// A hand-over decided on a version that is no longer the object's.
	l, err := res.List(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=cm-000"})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("read cm-000: %v, %d items", err, len(l.Items))
	}
	stale := &l.Items[0]
	cm, err := cms.Get(t.Context(), "cm-000", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"changed": "since"}
	if cm, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := shard.HandOverTo(t.Context(), res, stale, "a"); !apierrors.IsConflict(err) {
		t.Errorf("hand-over on resourceVersion %s after the object changed: %v; want a Conflict", stale.ResourceVersion, err)
	}
	got, err := cms.Get(t.Context(), "cm-000", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != cm.ResourceVersion || got.Labels[shard.ShardLabel] != "b" {
		t.Errorf("after the refused hand-over: resourceVersion %s, shard %q; want %s, b", got.ResourceVersion, got.Labels[shard.ShardLabel], cm.ResourceVersion)
	}
}
