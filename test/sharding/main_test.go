package sharding

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/engine/shard"
	"github.com/tmplop/operator/internal/testsupport/metricstest"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

var (
	env *cluster.Cluster
	// dyn and cs are the admin's clients without client-side rate limit:
	// the tests create, patch and list thousands of objects, and what they
	// measure is the operator, not client-go's token bucket.
	dyn dynamic.Interface
	cs  kubernetes.Interface
	bin string // the operator binary
)

var (
	shardies   = cluster.GVR("sharding.tmplop.io", "v1", "shardies")
	configMaps = cluster.GVR("", "v1", "configmaps")
)

const (
	group = "sharding.tmplop.io"
	kind  = "Shardy"

	shardLabel  = shard.ShardLabel
	heldByLabel = shard.HeldByLabel
	ringLabel   = shard.RingLabel
	managedBy   = "app.kubernetes.io/managed-by"

	// The replicas' Lease timings: short, so that a lost shard is seen
	// within seconds, but with a renew deadline that a write slowed by the
	// machine's load (a race build on 2 cores) does not miss: with 3 s and
	// 2 s a replica stopped itself in make test. docs/sharding.md's
	// figures were taken with 3 s, 2 s and 500 ms.
	leaseDuration = 5 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond

	// writers is how many goroutines create, patch and delete objects.
	writers = 8
	// pollInterval is how often a test looks at an observer's caches.
	pollInterval = 200 * time.Millisecond
)

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env, setup)) }

// setup installs the Shardy CRD and builds the operator, so that neither
// counts in a test's time.
func setup(c *cluster.Cluster) (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := c.Kubectl(ctx, "apply", "--server-side", "-f", "testdata/crd.yaml"); err != nil {
		return nil, fmt.Errorf("install CRD: %w: %s", err, out)
	}
	if out, err := c.Kubectl(ctx, "wait", "--for=condition=Established", "crd/shardies.sharding.tmplop.io", "--timeout=60s"); err != nil {
		return nil, fmt.Errorf("CRD not established: %w: %s", err, out)
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
	var err error
	if dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if bin, err = harness.BuildOperator(c.RepoRoot()); err != nil {
		return nil, err
	}
	return func() {}, nil
}

// ring is the replicas of one test: one field manager (the ring's name),
// one namespace of objects, one namespace of Leases.
type ring struct {
	fm      string
	ns      string // the objects'; every replica watches only it
	stateNS string // the Leases' and the inventory's
	// replicas in the order they were started, the killed ones included:
	// their proxies' logs still tell what they wrote.
	replicas []*replica
	obs      *observer // of ns
	probe    *probe    // the API server's write latency meanwhile
	// templates is the replicas' --templates, testdata/templates when
	// empty; extra are flags every replica is started with besides.
	templates string
	extra     []string
}

// newRing makes the namespaces of a ring, and starts its observer and its
// probe; everything ends with the test.
func newRing(t *testing.T, fm string) *ring {
	t.Helper()
	g := &ring{fm: fm, ns: env.Namespace(t), stateNS: env.Namespace(t)}
	g.obs = observe(t, g.ns)
	g.probe = startProbe(t, g.stateNS)
	return g
}

// replica is one operator process and the proxy all its requests go
// through.
type replica struct {
	id      string
	op      *harness.Operator
	proxy   *harness.Proxy
	metrics string // the /metrics URL
	started time.Time
	killed  bool // by the test, or stopped by it
}

// lasting is a testing.TB whose cleanups, temporary folders and logs
// belong to the whole test while its failures belong to the step running
// now: a replica started by a step outlives the step, and a failed start
// must stop the step's goroutine, not the parent's.
type lasting struct {
	testing.TB            // the top-level test
	step       *testing.T // the step that starts the replica
}

func (l lasting) Fatalf(format string, args ...any) { l.step.Helper(); l.step.Fatalf(format, args...) }
func (l lasting) Fatal(args ...any)                 { l.step.Helper(); l.step.Fatal(args...) }

// start runs one replica with shard id id, through a proxy of its own,
// and waits until it holds its shard Lease and serves the kind. top is the
// top-level test, which owns the process; t is the running step.
func (g *ring) start(top testing.TB, t *testing.T, id string) *replica {
	t.Helper()
	p, err := harness.NewProxy(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the operator's cleanup, so it runs after it.
	top.Cleanup(func() { _ = p.Close() })
	kc := filepath.Join(top.TempDir(), "kubeconfig-"+id)
	if err := p.WriteKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	addrs, err := cluster.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	templates, err := filepath.Abs(filepath.Join("testdata", "templates"))
	if err != nil {
		t.Fatal(err)
	}
	if g.templates != "" {
		templates = g.templates
	}
	started := time.Now()
	op := harness.StartOperator(lasting{top, t}, bin, append([]string{"run",
		"--templates", templates,
		"--kubeconfig", kc,
		"--field-manager", g.fm,
		"--state-namespace", g.stateNS,
		"--namespace", g.ns,
		"--reload-interval", "0",
		"--sharding",
		"--shard-id", id,
		"--leader-elect-lease-duration", leaseDuration.String(),
		"--leader-elect-renew-deadline", renewDeadline.String(),
		"--leader-elect-retry-period", retryPeriod.String(),
		"--metrics-bind-address", addrs[0],
		"--metrics-secure=false",
		// Hand-overs and retries by object: what a failure's story reads.
		"-v", "1",
	}, g.extra...)...)
	r := &replica{id: id, op: op, proxy: p, metrics: "http://" + addrs[0] + "/metrics", started: started}
	g.replicas = append(g.replicas, r)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for _, line := range []string{"Joined the ring", "Serving kind"} {
		if err := op.WaitForOutput(ctx, line); err != nil {
			t.Fatalf("replica %s: %v", id, err)
		}
	}
	// The id the replica joined with is the one it was given: the test
	// reads shard labels as replicas by it.
	name := shard.LeaseName(g.fm, id)
	l, err := cs.CoordinationV1().Leases(g.stateNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("replica %s logged that it joined the ring, but its Lease %s/%s: %v; the ring's Leases: %s", id, g.stateNS, name, err, g.leases(ctx))
	}
	if h := l.Spec.HolderIdentity; h == nil || *h != id {
		t.Fatalf("replica %s: Lease %s is held by %v, want %q", id, name, h, id)
	}
	return r
}

// leases lists the ring's Leases, for failure messages.
func (g *ring) leases(ctx context.Context) string {
	ls, err := cs.CoordinationV1().Leases(g.stateNS).List(ctx, metav1.ListOptions{LabelSelector: ringLabel + "=" + g.fm})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range ls.Items {
		h := "<none>"
		if l.Spec.HolderIdentity != nil {
			h = *l.Spec.HolderIdentity
		}
		out = append(out, l.Name+" (holder "+h+")")
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// live is the replicas not killed, by id.
func (g *ring) live() []*replica {
	var out []*replica
	for _, r := range g.replicas {
		if !r.killed {
			out = append(out, r)
		}
	}
	return out
}

func ids(rs []*replica) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.id)
	}
	return out
}

// sharder waits until one live replica logs that it was elected sharder
// and returns it.
func (g *ring) sharder(t *testing.T) *replica {
	t.Helper()
	var found *replica
	poll(t, 30*time.Second, 100*time.Millisecond, "one replica elected sharder", func(context.Context) (bool, error) {
		var elected []*replica
		for _, r := range g.live() {
			if strings.Contains(r.op.Output(), "Elected sharder") {
				elected = append(elected, r)
			}
		}
		if len(elected) == 0 {
			return false, errors.New("no replica logged \"Elected sharder\"")
		}
		found = elected[len(elected)-1]
		return true, nil
	})
	return found
}

// alive fails the step when a replica that should run has exited.
func (g *ring) alive(t testing.TB, step string) {
	t.Helper()
	if err := g.exited(); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

// exited describes the replicas that exited without the test stopping
// them: their last lines, and the API server's write latency before.
func (g *ring) exited() error {
	var out []string
	for _, r := range g.live() {
		if r.op.Alive() {
			continue
		}
		code, took, _ := r.op.Wait(time.Second) // it has exited: at once
		at := r.started.Add(took)
		worst, when, n := g.probe.worst(at.Add(-10*time.Second), at)
		out = append(out, fmt.Sprintf("replica %s exited with code %d at %s; the API server's slowest write of %d in the 10 s before took %s (at %s); its last lines:\n%s",
			r.id, code, at.Format("15:04:05.000"), n, worst.Round(time.Millisecond), when.Format("15:04:05.000"), lastLines(r.op.Output(), 12)))
	}
	if len(out) > 0 {
		return errors.New(strings.Join(out, "\n"))
	}
	return nil
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// probe writes a ConfigMap of its own every 250 ms and keeps how long each
// write took: the API server's latency for a write such as a Lease
// renewal, measured beside the replicas, to tell a slow control plane
// from a fault of theirs.
type probe struct {
	mu      sync.Mutex
	samples []sample
}

type sample struct {
	at   time.Time
	took time.Duration
}

func startProbe(t testing.TB, ns string) *probe {
	t.Helper()
	p := &probe{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "test-latency-probe", "namespace": ns},
	}}
	if _, err := dyn.Resource(configMaps).Namespace(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("latency probe: %v", err)
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
			start := time.Now()
			patch := fmt.Sprintf(`{"data":{"n":"%d"}}`, i)
			_, err := dyn.Resource(configMaps).Namespace(ns).Patch(wctx, "test-latency-probe", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			took := time.Since(start)
			wcancel()
			if err != nil && ctx.Err() != nil {
				return
			}
			p.mu.Lock()
			p.samples = append(p.samples, sample{at: start, took: took})
			p.mu.Unlock()
		}
	}()
	return p
}

// worst is the slowest write that started in [from, to), when it started,
// and how many writes started then.
func (p *probe) worst(from, to time.Time) (time.Duration, time.Time, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var worst time.Duration
	var when time.Time
	n := 0
	for _, s := range p.samples {
		if s.at.Before(from) || !s.at.Before(to) {
			continue
		}
		n++
		if s.took > worst {
			worst, when = s.took, s.at
		}
	}
	return worst, when, n
}

// report logs the probe's figures since from.
func (p *probe) report(t testing.TB, step string, from time.Time) {
	t.Helper()
	p.mu.Lock()
	var took []time.Duration
	for _, s := range p.samples {
		if !s.at.Before(from) {
			took = append(took, s.took)
		}
	}
	p.mu.Unlock()
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	over := 0
	for _, d := range took {
		if d > time.Second {
			over++
		}
	}
	t.Logf("%s: API server write latency (probe, %d writes): median %s, 99th percentile %s, worst %s; %d over 1 s",
		step, len(took), took[len(took)/2].Round(time.Millisecond), took[len(took)*99/100].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), over)
}

// poll calls cond every interval (after the previous call returned) until
// it returns true, and fails the test after timeout with cond's last error.
func poll(t testing.TB, timeout, interval time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil && ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				t.Fatalf("%s: not within %s: %v", what, timeout, last)
			}
			t.Fatalf("%s: not within %s", what, timeout)
		case <-time.After(interval):
		}
	}
}

// inParallel runs fn over names with the package's number of writers and
// returns the first error.
func inParallel(ctx context.Context, names []string, fn func(ctx context.Context, name string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range writers {
		wg.Go(func() {
			for name := range work {
				if err := fn(ctx, name); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		})
	}
feed:
	for _, n := range names {
		select {
		case work <- n:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return first
}

// objectNames is s-0000 ... for n objects.
func objectNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("s-%04d", i)
	}
	return out
}

// createAll creates a Shardy for each name with spec.value value(name).
func createAll(t testing.TB, ns string, names []string, value func(string) string) {
	t.Helper()
	err := inParallel(t.Context(), names, func(ctx context.Context, name string) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": shardies.GroupVersion().String(),
			"kind":       kind,
			"metadata":   map[string]any{"name": name, "namespace": ns},
			"spec":       map[string]any{"value": value(name)},
		}}
		_, err := dyn.Resource(shardies).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create %s/%s: %w", ns, name, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// patchValues sets spec.value of each name to value(name).
func patchValues(t testing.TB, ns string, names []string, value func(string) string) {
	t.Helper()
	err := inParallel(t.Context(), names, func(ctx context.Context, name string) error {
		patch := fmt.Sprintf(`{"spec":{"value":%q}}`, value(name))
		_, err := dyn.Resource(shardies).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("patch %s/%s: %w", ns, name, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot is the objects and ConfigMaps of a namespace as an observer's
// caches held them.
type snapshot struct {
	at      time.Time // when it was taken
	parents map[string]*unstructured.Unstructured
	cms     map[string]*unstructured.Unstructured
}

// observer watches a namespace's objects and ConfigMaps, so that a test
// waits on its caches instead of listing thousands of objects again and
// again: on two cores the LISTs cost the API server as much as the
// operators it measures.
type observer struct {
	parents, cms cache.SharedIndexInformer
}

// observe starts an observer of ns, stopped when the test ends.
func observe(t testing.TB, ns string) *observer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	o := &observer{parents: f.ForResource(shardies).Informer(), cms: f.ForResource(configMaps).Informer()}
	f.Start(ctx.Done())
	for gvr, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("observe %s in %s: cache not synced", gvr.Resource, ns)
		}
	}
	return o
}

// snapshot is the caches now. The objects are the caches': read only.
func (o *observer) snapshot() *snapshot {
	s := &snapshot{at: time.Now(), parents: map[string]*unstructured.Unstructured{}, cms: map[string]*unstructured.Unstructured{}}
	for _, obj := range o.parents.GetStore().List() {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			s.parents[u.GetName()] = u
		}
	}
	for _, obj := range o.cms.GetStore().List() {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			s.cms[u.GetName()] = u
		}
	}
	return s
}

// label is an object's shard label, "" when unassigned or absent.
func (s *snapshot) label(name string) string {
	if p, ok := s.parents[name]; ok {
		return labelOf(p, shardLabel)
	}
	return ""
}

// perShard counts the objects by shard label ("" unassigned).
func (s *snapshot) perShard() map[string]int {
	out := map[string]int{}
	for _, p := range s.parents {
		out[labelOf(p, shardLabel)]++
	}
	return out
}

// want is what a snapshot should show.
type want struct {
	fm    string
	names []string // objects that must exist and have converged
	gone  []string // objects that must be gone, and their ConfigMaps
	// deleting are objects that must be gone, whose ConfigMaps the
	// garbage collector may not have deleted yet.
	deleting []string
	live     []string // the live shards: every object on one of them
	// owners, when set, is the ring of the live shards: every object on
	// the shard the ring gives its key (the protocol's assignment).
	owners *shard.Ring
}

// problems lists what keeps s from w, one line per object, sorted; with
// limit > 0 it stops after that many, for the polls that only need to know
// whether there is any: reading 3,000 objects ten times a second must not
// cost the machine the replicas run on.
func (s *snapshot) problems(ns string, w want, limit int) []string {
	var out []string
	full := func() bool { return limit > 0 && len(out) >= limit }
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, name := range w.names {
		if full() {
			break
		}
		p, ok := s.parents[name]
		if !ok {
			add("%s: gone", name)
			continue
		}
		lbl := labelOf(p, shardLabel)
		switch {
		case lbl == "":
			add("%s: not assigned", name)
			continue
		case !slices.Contains(w.live, lbl):
			add("%s: on shard %q, not a live one %v", name, lbl, w.live)
			continue
		}
		if w.owners != nil {
			if o := w.owners.Owner(shard.Key(group, kind, ns, name)); o != lbl {
				add("%s: on shard %s, the ring of %v gives %s", name, lbl, w.live, o)
				continue
			}
		}
		spec, status := stringAt(p, "spec", "value"), stringAt(p, "status", "value")
		if status != spec {
			add("%s: status.value %q, spec.value %q", name, status, spec)
			continue
		}
		og, _ := field(p, "status", "observedGeneration").(int64)
		for _, typ := range []string{"Reconciled", "Ready"} {
			if c := condition(p, typ); c["status"] != "True" || og != p.GetGeneration() {
				add("%s: %s=%v %v: %v (observedGeneration %d of %d)", name, typ, c["status"], c["reason"], c["message"], og, p.GetGeneration())
			}
		}
		cm, ok := s.cms[name]
		if !ok {
			add("%s: no ConfigMap", name)
			continue
		}
		if v := stringAt(cm, "data", "value"); v != spec {
			add("%s: ConfigMap data.value %q, spec.value %q", name, v, spec)
		}
		if h := labelOf(cm, heldByLabel); h != lbl {
			add("%s: ConfigMap %s=%q, parent on shard %q", name, heldByLabel, h, lbl)
		}
		if m := labelOf(cm, managedBy); m != w.fm {
			add("%s: ConfigMap %s=%q, want %q", name, managedBy, m, w.fm)
		}
		if uid := controllerUID(cm); uid != string(p.GetUID()) {
			add("%s: ConfigMap's controller is %q, not its parent (uid %s)", name, uid, p.GetUID())
		}
	}
	for _, name := range w.gone {
		if full() {
			break
		}
		if _, ok := s.parents[name]; ok {
			add("%s: not gone", name)
		}
		if _, ok := s.cms[name]; ok {
			add("%s: its ConfigMap is not gone", name)
		}
	}
	for _, name := range w.deleting {
		if full() {
			break
		}
		if _, ok := s.parents[name]; ok {
			add("%s: not gone", name)
		}
	}
	// Orphans: a ConfigMap of this ring whose parent is gone.
	for name, cm := range s.cms {
		if full() {
			break
		}
		if labelOf(cm, managedBy) != w.fm {
			continue
		}
		if _, ok := s.parents[name]; !ok && !slices.Contains(w.gone, name) && !slices.Contains(w.deleting, name) {
			add("ConfigMap %s: orphan, its parent is gone", name)
		}
	}
	sort.Strings(out)
	return out
}

// field is the value at path in u, not copied: the caches' objects are
// read here thousands of times a second, and unstructured's getters copy.
func field(u *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	return v
}

func stringAt(u *unstructured.Unstructured, path ...string) string {
	s, _ := field(u, path...).(string)
	return s
}

func labelOf(u *unstructured.Unstructured, key string) string {
	labels, _ := field(u, "metadata", "labels").(map[string]any)
	s, _ := labels[key].(string)
	return s
}

// condition is the status condition of type typ, nil when absent.
func condition(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _ := field(u, "status", "conditions").([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// controllerUID is the uid of u's controller owner reference, "" if none.
func controllerUID(u *unstructured.Unstructured) string {
	refs, _ := field(u, "metadata", "ownerReferences").([]any)
	for _, r := range refs {
		if m, ok := r.(map[string]any); ok && m["controller"] == true {
			uid, _ := m["uid"].(string)
			return uid
		}
	}
	return ""
}

// summary is the first few problems and their count.
func summary(problems []string) string {
	const show = 8
	if len(problems) <= show {
		return fmt.Sprintf("%d: %s", len(problems), strings.Join(problems, "; "))
	}
	return fmt.Sprintf("%d, the first %d: %s", len(problems), show, strings.Join(problems[:show], "; "))
}

// waitFor polls the ring's observer until it shows w, and returns the
// snapshot that did. It fails at once when a replica exits.
func (g *ring) waitFor(t testing.TB, w want, timeout time.Duration, what string) *snapshot {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		g.alive(t, what)
		s := g.obs.snapshot()
		if len(s.problems(g.ns, w, 1)) == 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s (per shard: %v)", what, timeout, summary(s.problems(g.ns, w, 0)), s.perShard())
		}
		time.Sleep(pollInterval)
	}
}

// write is one write request of a replica to a Shardy or its ConfigMap.
type write struct {
	at     time.Time
	by     string // the replica's shard id
	object string
	// what: "child" (an apply, or a DELETE), "child-label" (a merge patch
	// of the ConfigMap's held-by label: a child moved with its parent),
	// "status", or "label" (the parent itself: its shard label).
	what   string
	method string
	code   int
}

// writesOf is every write of the ring's replicas to the objects of its
// namespace and their ConfigMaps since from, oldest first.
func (g *ring) writesOf(from time.Time) []write {
	childPrefix := "/api/v1/namespaces/" + g.ns + "/configmaps/"
	parentPrefix := "/apis/" + group + "/v1/namespaces/" + g.ns + "/" + shardies.Resource + "/"
	var out []write
	for _, r := range g.replicas {
		for _, q := range r.proxy.Requests() {
			if !harness.IsWrite(q) || q.Time.Before(from) {
				continue
			}
			w := write{at: q.Time, by: r.id, method: q.Method, code: q.Code}
			if rest, ok := strings.CutPrefix(q.Path, childPrefix); ok {
				w.object, w.what = rest, "child"
				// Every apply is server-side with force; a label move is
				// a merge patch without it.
				if q.Method == http.MethodPatch && !strings.Contains(q.Query, "force=true") {
					w.what = "child-label"
				}
			} else if rest, ok := strings.CutPrefix(q.Path, parentPrefix); ok {
				if name, ok := strings.CutSuffix(rest, "/status"); ok {
					w.object, w.what = name, "status"
				} else {
					w.object, w.what = rest, "label"
				}
			} else {
				continue
			}
			out = append(out, w)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// byObject groups writes by object, keeping their order.
func byObject(ws []write, what ...string) map[string][]write {
	out := map[string][]write{}
	for _, w := range ws {
		if slices.Contains(what, w.what) {
			out[w.object] = append(out[w.object], w)
		}
	}
	return out
}

// timeline is an object's writes for a failure message.
func timeline(ws []write, from time.Time) string {
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("+%s %s %s %s %d", w.at.Sub(from).Round(time.Millisecond), w.by, w.what, w.method, w.code))
	}
	return strings.Join(parts, ", ")
}

// writers is the sequence of replicas that wrote, with repeats collapsed:
// [a b] is one switch, [a b a] a reconcile by a after b had started.
func writerSequence(ws []write) []string {
	var seq []string
	for _, w := range ws {
		if len(seq) == 0 || seq[len(seq)-1] != w.by {
			seq = append(seq, w.by)
		}
	}
	return seq
}

// scrape reads a replica's metrics by family.
func (r *replica) scrape(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	code, body, err := harness.HTTPGet(ctx, r.metrics)
	if err != nil {
		return nil, fmt.Errorf("replica %s metrics: %w", r.id, err)
	}
	if code != 200 {
		return nil, fmt.Errorf("replica %s metrics: HTTP %d: %s", r.id, code, body)
	}
	return metricstest.Parse(body)
}

// total sums a family's series with labels (nil: all).
func total(mfs map[string]*dto.MetricFamily, family string, labels map[string]string) float64 {
	mf, ok := mfs[family]
	if !ok {
		return 0
	}
	return metricstest.Total(mf, labels)
}

// logMetrics logs each live replica's sharding figures and returns each
// one's operator_objects{ready="True"} by id.
func (g *ring) logMetrics(t *testing.T, step string) map[string]float64 {
	t.Helper()
	held := map[string]float64{}
	for _, r := range g.live() {
		mfs, err := r.scrape(t.Context())
		if err != nil {
			t.Errorf("%s: %v", step, err)
			continue
		}
		held[r.id] = total(mfs, "operator_objects", map[string]string{"ready": "True"})
		t.Logf("%s: replica %s metrics: objects ready=%.0f (all %.0f), child applies written %.0f, hand-overs %.0f, sharder assigned %.0f, reassigned %.0f, children moved %.0f, conflicts %.0f",
			step, r.id, held[r.id], total(mfs, "operator_objects", nil),
			total(mfs, "operator_child_applies_total", map[string]string{"result": "written"}),
			total(mfs, "operator_shard_handovers_total", nil),
			total(mfs, "operator_sharder_assigned_total", nil),
			total(mfs, "operator_sharder_reassigned_total", nil),
			total(mfs, "operator_sharder_children_moved_total", nil),
			total(mfs, "operator_sharder_conflicts_total", nil))
	}
	return held
}

// mib is bytes in MiB, for messages.
func mib(b int64) float64 { return float64(b) / (1 << 20) }
