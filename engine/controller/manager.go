package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/inventory"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/render"
)

// Options configure a Manager.
type Options struct {
	// FieldManager is the server-side apply field manager and the value of
	// the children's managed-by label.
	FieldManager string
	// Namespace restricts the watches to one namespace; "" watches all.
	Namespace string
	// StateNamespace holds the operator's own records (the inventory
	// ConfigMap); "" means "default".
	StateNamespace string
	// Recorder records Events on the objects.
	Recorder record.EventRecorder
	// NewClient returns the client a kind's cluster calls go through; nil:
	// one client from the Manager's config for every kind. It is the seam
	// for per-kind credentials (impersonating the kind's ServiceAccount).
	NewClient func(k *catalog.Kind) (*kube.Client, error)
	// Budget is every render's budget, unless kind.yaml overrides it.
	Budget render.Budget
	// MinRequeue is the shortest requeueAfter honoured; 0: DefaultMinRequeue.
	MinRequeue time.Duration
	// DrainTimeout bounds how long a stopping kind lets in-flight reconciles
	// finish before canceling them; 0: DefaultDrainTimeout.
	DrainTimeout time.Duration
	// PruneConfirmDelay is how long the deletion guard holds a prune back;
	// 0: reconcile.DefaultPruneConfirmDelay.
	PruneConfirmDelay time.Duration
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
	opts      Options
	base      *kube.Client
	applier   *apply.Applier
	inventory *inventory.Store

	ctx      context.Context
	children *childWatches
	lookups  *lookupWatches

	mu    sync.Mutex
	kinds map[schema.GroupKind]*kindController
	wg    sync.WaitGroup
	// reported holds the last error logged per broken folder, so that a
	// folder that stays broken is logged once, not at every reload.
	reported map[string]string
}

// NewManager returns a Manager whose watches live until ctx is done.
func NewManager(ctx context.Context, cfg *rest.Config, opts Options) (*Manager, error) {
	if opts.FieldManager == "" {
		return nil, fmt.Errorf("a field manager is required")
	}
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
	base, err := kube.New(cfg, opts.FieldManager)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	name, err := inventoryName(opts.FieldManager)
	if err != nil {
		return nil, err
	}
	m := &Manager{opts: opts, base: base, ctx: ctx, kinds: map[schema.GroupKind]*kindController{}, reported: map[string]string{},
		inventory: inventory.New(cs.CoreV1().ConfigMaps(opts.StateNamespace), name)}
	m.children = &childWatches{
		ctx: ctx, dyn: dyn, meta: md, manager: opts.FieldManager, namespace: opts.Namespace,
		route: m.routeChild,
		byGR:  map[schema.GroupResource]*childWatch{}, waiting: map[apply.Key][]ownership.Parent{},
	}
	m.applier = apply.NewApplier(m.children, m.children.routeParentOf)
	m.children.applier = m.applier
	m.lookups = &lookupWatches{
		ctx: ctx, dyn: dyn, namespace: opts.Namespace, route: m.route,
		informers: map[lookupKey]*lookupInformer{},
		reads:     map[schema.GroupVersionResource]map[parentRef][]read{},
	}
	return m, nil
}

// inventoryName is the inventory ConfigMap's name for a field manager.
func inventoryName(fieldManager string) (string, error) {
	name := strings.ToLower(fieldManager) + "-inventory"
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", fmt.Errorf("field manager %q: cannot name the inventory ConfigMap %q: %s", fieldManager, name, strings.Join(errs, "; "))
	}
	return name, nil
}

// Start starts serving kind k; it returns at once. A kind already running
// under the same group and kind is replaced (its folder changed).
func (m *Manager) Start(k *catalog.Kind) error {
	client := m.base
	if m.opts.NewClient != nil {
		c, err := m.opts.NewClient(k)
		if err != nil {
			return fmt.Errorf("client for kind %s: %w", k.GVK.Kind, err)
		}
		client = c
	}
	gk := k.GVK.GroupKind()
	m.Stop(gk)
	ctx, cancel := context.WithCancel(m.ctx)
	kc := &kindController{
		kind: k, client: client, cancel: cancel, done: make(chan struct{}),
		namespace: m.opts.Namespace, lookups: m.lookups,
		minRequeue: m.opts.MinRequeue, drainTimeout: m.opts.DrainTimeout,
		stats: &reconcile.Stats{},
	}
	kc.reconciler = &reconcile.Reconciler{
		Kind: k, Client: client, Applier: m.applier, Recorder: m.opts.Recorder,
		Lookups:   &kindLookups{w: m.lookups, client: client, specs: k.Spec.Lookups},
		Inventory: m.inventory, Manager: m.opts.FieldManager, Budget: m.opts.Budget,
		PruneConfirmDelay: m.opts.PruneConfirmDelay, WaitFor: m.children.WaitFor, Stats: kc.stats,
	}
	m.mu.Lock()
	m.kinds[gk] = kc
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		kc.run(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("kind", k.GVK.Kind, "folder", k.Name)))
	}()
	return nil
}

// Stop stops serving the kind gk and waits until its workers have finished
// what they were doing. Its objects and children are left as they are.
func (m *Manager) Stop(gk schema.GroupKind) {
	m.mu.Lock()
	kc := m.kinds[gk]
	delete(m.kinds, gk)
	m.mu.Unlock()
	if kc != nil {
		kc.stop()
		m.lookups.forgetKind(gk)
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

// routeChild enqueues the parent of a child event.
func (m *Manager) routeChild(p ownership.Parent) {
	m.route(parentRef{gk: p.GroupKind, key: cacheKey(p.Namespace, p.Name)})
}

func (m *Manager) route(p parentRef) {
	m.mu.Lock()
	kc := m.kinds[p.gk]
	m.mu.Unlock()
	if kc != nil {
		kc.enqueue(p.key)
	}
}
