package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/inventory"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/revision"
	"github.com/tmplop/operator/engine/shard"
)

// Options configure a Manager.
type Options struct {
	// FieldManager is the server-side apply field manager and the value of
	// the children's managed-by label.
	FieldManager string
	// Namespace restricts the watches to one namespace; "" watches all.
	// No child is written, and no lookup read, outside it.
	Namespace string
	// Protected are the operator's own namespaces (its kind folders'
	// ConfigMaps, its Lease): no kind may write a child or read a lookup
	// there, whatever its folder says.
	Protected []string
	// StateNamespace holds the operator's own records (the inventory
	// ConfigMap); "" means "default".
	StateNamespace string
	// Recorder records Events on the objects.
	Recorder record.EventRecorder
	// NewClient returns the client a kind's cluster calls go through; nil:
	// a client impersonating the kind's ServiceAccount of StateNamespace
	// (kind.yaml serviceAccountName; else, under DefaultServiceAccount, the
	// account that agrees to serve the kind, or DefaultServiceAccount), or
	// the Manager's own client when there is none.
	NewClient func(k *catalog.Kind) (*kube.Client, error)
	// DefaultServiceAccount is the ServiceAccount of StateNamespace that
	// every kind without an account of its own impersonates, so that a kind
	// folder (which anyone who may write a labelled ConfigMap can add)
	// never runs with the operator's own rights. A kind's own account is
	// the one its folder names, else the one account of StateNamespace
	// that lists the kind in AnnotationServes: the installer's choice,
	// which keeps the default account free of any kind's rights. "": such
	// kinds run as the operator.
	DefaultServiceAccount string
	// Budget is every render's budget, unless kind.yaml overrides it.
	Budget render.Budget
	// FolderLimits bound what compiling a kind folder may take (run
	// --chart-max-unpacked); the zero value is catalog's defaults.
	FolderLimits catalog.Limits
	// MinRequeue is the shortest requeueAfter honoured; 0: DefaultMinRequeue.
	MinRequeue time.Duration
	// DrainTimeout bounds how long a stopping kind lets in-flight reconciles
	// finish before canceling them; 0: DefaultDrainTimeout.
	DrainTimeout time.Duration
	// PruneConfirmDelay is how long the deletion guard holds a prune back;
	// 0: reconcile.DefaultPruneConfirmDelay.
	PruneConfirmDelay time.Duration
	// Standby starts the kinds' watches but no reconcile, prune or sweep
	// until Lead is called: a replica waiting for the leader election has
	// its caches warm, so that taking over costs no list.
	Standby bool
	// InstallCRD, when set, installs a kind's CRD before the kind starts,
	// and again before it restarts with a changed folder (run
	// --install-crds). An error counts as a folder that failed to load: the
	// kind's last good version goes on serving. A standby replica does not
	// call it: the leader installs.
	InstallCRD func(ctx context.Context, k *catalog.Kind) error
	// Loaded, when set, is told of every kind folder about to be served,
	// on every replica (standby and sharded ones too), before its CRD is
	// installed: the conversion webhook must convert between the versions
	// of the folder that the CRD installed next names (run's converters).
	Loaded func(k *catalog.Kind)
	// Sharding runs the Manager as one shard of a ring (run --sharding):
	// it serves only the objects labelled with its shard, and applies
	// children labelled so. nil: every object (and Standby, if set).
	Sharding *Sharding
}

// Sharding is what a sharded Manager needs of its ring (engine/shard).
type Sharding struct {
	// ID is this replica's shard, whose Lease the caller holds (shard.Join):
	// the caller must stop every write of this process when it loses it.
	ID string
	// Members are the ring's live shards, started.
	Members *shard.Members
	// Sharder is closed once this replica is elected the ring's sharder:
	// from then on each kind runs a shard.Sharder that assigns its
	// unassigned objects and moves those of dead shards. The caller ends
	// the process when the election is lost.
	Sharder <-chan struct{}
}

// Defaults of Options.
const (
	// DefaultMinRequeue is the floor of requeueAfter: a spec field that
	// asks for "1ns" must not spin a worker.
	DefaultMinRequeue = time.Second
	// DefaultDrainTimeout leaves a Pod's default 30 s grace period room to
	// flush Events and exit.
	DefaultDrainTimeout = 20 * time.Second
)

// Manager runs kinds and the watches they share.
type Manager struct {
	opts Options
	// base is the operator's own client: its records, the kinds'
	// ServiceAccounts (their agreement), the watches of children and of
	// the kinds that impersonate no one.
	base      *kube.Client
	applier   *apply.Applier
	inventory *inventory.Store
	// revisions are the kinds' revision records (engine/revision), in
	// StateNamespace, written as the operator itself.
	revisions *revision.Store

	ctx      context.Context
	watches  *watchSet
	children *childWatches
	lookups  *lookupWatches

	mu    sync.Mutex
	kinds map[schema.GroupKind]*kindController
	// stats outlive a kind's restarts, so that its counters only grow (ready.go).
	stats map[schema.GroupKind]*reconcile.Stats
	// writes are each kind's ownWrites, kept across its restarts.
	writes map[schema.GroupKind]*ownWrites
	wg     sync.WaitGroup
	// leading is closed when the Manager may write (see Options.Standby).
	leading  chan struct{}
	leadOnce sync.Once
	// loaded is set once the kind folders were first loaded: until then,
	// serving no kind does not mean ready.
	loaded atomic.Bool
	// syncMu serializes SyncFolders, and guards loadedKinds: the kinds the
	// last sync loaded, by folder (Loading.Last).
	syncMu      sync.Mutex
	loadedKinds map[string]*catalog.Kind
	// reported holds the last error logged per broken folder, so that a
	// folder that stays broken is logged once, not at every reload.
	reported map[string]string
}

// NewManager returns a Manager whose watches live until ctx is done, on a
// client of cfg (see NewManagerForClient).
func NewManager(ctx context.Context, cfg *rest.Config, opts Options) (*Manager, error) {
	client, err := kube.New(cfg, opts.FieldManager)
	if err != nil {
		return nil, err
	}
	return NewManagerForClient(ctx, client, opts)
}

// NewManagerForClient returns a Manager whose every cluster call goes
// through client (the operator's own identity) or a client it makes from
// it (Impersonating), and whose watches live until ctx is done. The
// client's field manager must be opts.FieldManager.
func NewManagerForClient(ctx context.Context, client *kube.Client, opts Options) (*Manager, error) {
	if opts.FieldManager == "" {
		return nil, fmt.Errorf("a field manager is required")
	}
	if client.FieldManager() != opts.FieldManager {
		return nil, fmt.Errorf("the client's field manager %q is not %q", client.FieldManager(), opts.FieldManager)
	}
	opts = withDefaults(opts)
	name, err := inventory.Name(opts.FieldManager)
	if err != nil {
		return nil, err
	}
	m := &Manager{opts: opts, base: client, leading: make(chan struct{}), ctx: ctx, kinds: map[schema.GroupKind]*kindController{}, reported: map[string]string{},
		watches: newWatchSet(ctx), inventory: inventory.New(client, opts.StateNamespace, name),
		revisions: revision.New(client, opts.StateNamespace, opts.FieldManager)}
	if !opts.Standby {
		m.Lead()
	}
	m.children = &childWatches{
		ctx: ctx, set: m.watches, client: client, manager: opts.FieldManager, namespace: opts.Namespace, shard: opts.shardID(),
		route: m.routeChild, parents: m.parents,
		byGR: map[schema.GroupResource]*childWatch{}, waiting: map[apply.Key][]ownership.Parent{},
	}
	m.watches.admit = m.children.admitted
	m.applier = apply.NewApplier(m.children, m.children.routeParentOf)
	m.children.applier = m.applier
	m.lookups = &lookupWatches{
		set: m.watches, base: client, namespace: opts.Namespace, route: m.route,
		informers: map[watchKey]*lookupInformer{},
		reads:     map[schema.GroupVersionResource]map[parentRef][]read{},
	}
	return m, nil
}

// shardID is this replica's shard, "" when not sharded.
func (o Options) shardID() string {
	if o.Sharding == nil {
		return ""
	}
	return o.Sharding.ID
}

func withDefaults(opts Options) Options {
	if opts.Recorder == nil {
		opts.Recorder = &record.FakeRecorder{}
	}
	if opts.MinRequeue <= 0 {
		opts.MinRequeue = DefaultMinRequeue
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	if opts.StateNamespace == "" {
		opts.StateNamespace = "default"
	}
	return opts
}

// Lead lets the kinds reconcile: this replica was elected leader.
func (m *Manager) Lead() { m.leadOnce.Do(func() { close(m.leading) }) }

// Leading reports whether the Manager may write (Lead was called).
func (m *Manager) Leading() bool {
	select {
	case <-m.leading:
		return true
	default:
		return false
	}
}

// Start starts serving kind k as its identity (see agreements.identity);
// it returns at once. A kind already running under the same group and kind
// is replaced (its folder changed). SyncFolders also checks, before it
// starts a kind, that the kind's account may watch it.
func (m *Manager) Start(k *catalog.Kind) error {
	id, err := m.agreements().identity(m.ctx, k)
	if err != nil {
		return err
	}
	client, err := m.clientAs(k, id)
	if err != nil {
		return fmt.Errorf("client for kind %s: %w", k.GVK.Kind, err)
	}
	m.start(k, id, client, false)
	return nil
}

// start starts serving kind k as id through client; checked says whether
// checkAccess has answered for it.
func (m *Manager) start(k *catalog.Kind, id identity, client *kube.Client, checked bool) {
	gk := k.GVK.GroupKind()
	m.stop(gk, false) // a restart keeps the children's watches the kind holds
	ctx, cancel := context.WithCancel(withKind(m.ctx, gk))
	kc := &kindController{
		kind: k, identity: id, accessChecked: checked, client: client, cancel: cancel, done: make(chan struct{}),
		namespace: m.opts.Namespace, watches: m.watches, lookups: m.lookups, leading: m.leading,
		minRequeue: m.opts.MinRequeue, drainTimeout: m.opts.DrainTimeout,
		stats: m.statsOf(gk), sharding: m.opts.Sharding, children: m.children, writes: m.writesOf(gk), revisions: m.revisions,
	}
	newReconciler := func(k *catalog.Kind, client *kube.Client) *reconcile.Reconciler {
		r := &reconcile.Reconciler{
			Kind: k, Client: client, Applier: m.applier, Recorder: m.opts.Recorder,
			Lookups:   &kindLookups{w: m.lookups, client: client, kind: k, bounds: m.bounds()},
			Inventory: m.inventory, Manager: m.opts.FieldManager, Bounds: m.bounds(), Budget: m.opts.Budget,
			PruneConfirmDelay: m.opts.PruneConfirmDelay, WaitFor: m.children.WaitFor, Stats: kc.stats,
			Shard: m.opts.shardID(), Writes: kc.writes,
		}
		if k.ReadsCluster() {
			r.Cluster = m.cluster(ctx, client)
		}
		return r
	}
	kc.reconciler = newReconciler(k, client)
	// An older revision served beside the folder (a staged rollout) runs
	// as its own kind.yaml's identity: a change of serviceAccountName
	// moves with the objects, step by step.
	kc.newReconciler = func(ctx context.Context, old *catalog.Kind) (*reconcile.Reconciler, error) {
		if old.Spec.ServiceAccountName == k.Spec.ServiceAccountName {
			return newReconciler(old, client), nil
		}
		id, err := m.agreements().identity(ctx, old)
		if err != nil {
			return nil, err
		}
		c, err := m.clientAs(old, id)
		if err != nil {
			return nil, fmt.Errorf("client for kind %s: %w", old.GVK.Kind, err)
		}
		return newReconciler(old, c), nil
	}
	kc.base = m.base
	kc.staged = newStaged(kc, k)
	m.mu.Lock()
	m.kinds[gk] = kc
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		kc.run(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("kind", k.GVK.Kind, "folder", k.Name)))
	}()
}

// cluster is what a kind's templates see of the cluster (a chart's
// .Capabilities), read when the kind starts (and so again when its folder
// changes). Without an answer from discovery, Helm's defaults serve, as
// offline.
func (m *Manager) cluster(ctx context.Context, client *kube.Client) catalog.Cluster {
	version, apiVersions, err := client.Cluster()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Reading the cluster's capabilities for a chart; Helm's defaults serve")
		return catalog.Cluster{}
	}
	return catalog.Cluster{KubeVersion: version, APIVersions: apiVersions}
}

// bounds are where no kind may write or read, whatever its folder says.
func (m *Manager) bounds() ownership.Bounds {
	return ownership.Bounds{Namespace: m.opts.Namespace, Protected: m.opts.Protected}
}

// Stop stops serving the kind gk and waits until its workers have finished
// what they were doing. Its objects and children are left as they are;
// the watches it held stop unless another kind holds them.
func (m *Manager) Stop(gk schema.GroupKind) { m.stop(gk, true) }

// stop stops kind gk; for good, it also lets go of the children's watches
// the kind held, which a restart of the kind keeps.
func (m *Manager) stop(gk schema.GroupKind, forGood bool) {
	m.mu.Lock()
	kc := m.kinds[gk]
	delete(m.kinds, gk)
	m.mu.Unlock()
	if kc != nil {
		kc.stop()
		m.lookups.forgetKind(gk)
	}
	if forGood {
		m.children.release(gk)
	}
}

// Kinds returns the group-kinds being served.
func (m *Manager) Kinds() []schema.GroupKind {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]schema.GroupKind, 0, len(m.kinds))
	for gk := range m.kinds {
		out = append(out, gk)
	}
	return out
}

// Stats returns the counters of kind gk, or nil when it is not served.
func (m *Manager) Stats(gk schema.GroupKind) *reconcile.Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if kc := m.kinds[gk]; kc != nil {
		return kc.stats
	}
	return nil
}

// watchOf is the watch of kind gk's objects; nil when the kind is not
// served or not watched yet.
func (m *Manager) watchOf(gk schema.GroupKind) *watchHandle {
	m.mu.Lock()
	kc := m.kinds[gk]
	m.mu.Unlock()
	if kc == nil {
		return nil
	}
	kc.mu.Lock()
	defer kc.mu.Unlock()
	return kc.watch
}

// Objects counts the objects of kind gk in its watch's cache by the status
// of their Ready condition (metrics.ObjectCounter); nil when the kind is
// not served or not watched yet.
func (m *Manager) Objects(gk schema.GroupKind) map[string]int {
	h := m.watchOf(gk)
	if h == nil {
		return nil
	}
	out := map[string]int{}
	for _, o := range h.informer().GetStore().List() {
		if c, ok := o.(*cached.Object); ok {
			out[c.Condition("Ready")]++
		}
	}
	return out
}

// TrueConditions counts the objects of kind gk in its watch's cache whose
// condition of each of types is True (metrics.ConditionCounter); nil when
// the kind is not served or not watched yet.
func (m *Manager) TrueConditions(gk schema.GroupKind, types ...string) map[string]int {
	h := m.watchOf(gk)
	if h == nil {
		return nil
	}
	out := make(map[string]int, len(types))
	for _, o := range h.informer().GetStore().List() {
		if c, ok := o.(*cached.Object); ok {
			for _, typ := range types {
				if c.Condition(typ) == "True" {
					out[typ]++
				}
			}
		}
	}
	return out
}

// Rollout says where kind gk's staged rollout is (metrics.RolloutReader).
func (m *Manager) Rollout(gk schema.GroupKind) (step, steps int, phase string, from, to int64, ok bool) {
	m.mu.Lock()
	kc := m.kinds[gk]
	m.mu.Unlock()
	if kc == nil || kc.staged == nil {
		return 0, 0, "", 0, 0, false
	}
	st := kc.staged.state.Load()
	if st == nil {
		return 0, 0, "", 0, 0, false
	}
	return st.Step + 1, st.Steps, string(st.Phase), st.From.Number, st.To.Number, true
}

// Wait stops every kind, letting in-flight reconciles finish, and returns
// when all have stopped. Call it after the context is canceled.
func (m *Manager) Wait() {
	var wg sync.WaitGroup
	for _, gk := range m.Kinds() {
		wg.Go(func() { m.Stop(gk) })
	}
	wg.Wait()
	m.wg.Wait()
}

// parents is the view of kind gk's objects that the admission of children
// reads; false when gk is not served.
func (m *Manager) parents(gk schema.GroupKind) (parentView, bool) {
	m.mu.Lock()
	kc := m.kinds[gk]
	m.mu.Unlock()
	if kc == nil {
		return parentView{}, false
	}
	return kc.parents()
}

// routeChild enqueues the parent of a child event.
func (m *Manager) routeChild(p ownership.Parent) {
	m.route(parentRef{gk: p.GroupKind, name: cache.NewObjectName(p.Namespace, p.Name)})
}

func (m *Manager) route(p parentRef) {
	m.mu.Lock()
	kc := m.kinds[p.gk]
	m.mu.Unlock()
	if kc != nil {
		kc.enqueue(p.name)
	}
}
