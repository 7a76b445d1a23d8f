package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"

	"github.com/tmplop/operator/engine/ownership"
)

// controllerClient is the controller a developer would write by hand for
// the BenchApp, in the shape of client-go's sample-controller: informers on
// the BenchApps and on the Deployments and Services it made (typed, with
// its managed-by label as the server-side selector), a rate-limited work
// queue fed by their events (a child's event enqueues its controller),
// limitWorkers workers, and listers to decide. It writes what the limit
// writes (the same builders), and skips what is already so: a child whose
// hash annotation is the desired one, a status whose observedGeneration is
// the generation. Like the ReplicaSet controller's expectations, it
// remembers what it wrote until its informers catch up, so that the echo of
// its own write does not send it again.
//
// Against the limit it shows what watching costs any controller: the
// informers' lists, watches, decoding and caches. Against the operator, what
// the template engine costs on top of a controller written for one kind.
type controllerClient struct {
	kind      benchKind
	dyn       dynamic.Interface
	namespace string

	apps        cache.GenericNamespaceLister
	deployments cache.Indexer
	services    cache.Indexer
	queue       workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// applied is the hash last applied of each child ("Deployment/name").
	applied map[string]string
	// written is the generation whose status was last written, by UID.
	written map[types.UID]int64
	// pending are the BenchApps listed at the start whose status is not
	// yet written; done is closed when none is left.
	pending map[types.UID]bool
	done    chan struct{}
}

// runController is `bench controller`: the cold pass of the hand-written
// controller and its report (a limitReport) on stdout once it has written
// the status of every BenchApp its first list held.
func runController(ctx context.Context, args []string, stdout io.Writer) error {
	start := time.Now()
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the controller's identity")
	namespace := fs.String("namespace", "limit", "namespace of the BenchApps")
	workers := fs.Int("workers", 10, "objects served at once")
	kindName := fs.String("kind", "folder", "the kind whose objects to write: folder or chart")
	if err := fs.Parse(args); err != nil {
		return err
	}
	kind, err := kindNamed(*kindName)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("controller: load kubeconfig %s: %w", *kubeconfig, err)
	}
	cfg.QPS, cfg.UserAgent = -1, "bench-controller"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("controller: client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("controller: client: %w", err)
	}
	c := &controllerClient{
		kind: kind, dyn: dyn, namespace: *namespace,
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		applied: map[string]string{}, written: map[types.UID]int64{}, pending: map[types.UID]bool{},
		done: make(chan struct{}),
	}
	defer c.queue.ShutDown()

	// The caches leave out managedFields, as a careful controller's do
	// (controller-runtime's cache.TransformStripManagedFields): nothing here
	// reads them, and they are the larger part of a small object.
	appsFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, c.namespace, nil)
	apps := appsFactory.ForResource(benchAppGVR)
	if err := apps.Informer().SetTransform(stripManagedFields); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	children := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(c.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = ownership.LabelManagedBy + "=" + limitManager
		}), informers.WithTransform(stripManagedFields))
	deployments := children.Apps().V1().Deployments().Informer()
	services := children.Core().V1().Services().Informer()
	c.apps = apps.Lister().ByNamespace(c.namespace)
	c.deployments, c.services = deployments.GetIndexer(), services.GetIndexer()

	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := apps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) },
	}); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	owner := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueOwner,
		UpdateFunc: func(_, cur any) { c.enqueueOwner(cur) },
		DeleteFunc: c.enqueueOwner,
	}
	for _, inf := range []cache.SharedIndexInformer{deployments, services} {
		if _, err := inf.AddEventHandler(owner); err != nil {
			return fmt.Errorf("controller: %w", err)
		}
	}
	go apps.Informer().RunWithContext(ctx)
	children.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), apps.Informer().HasSynced, deployments.HasSynced, services.HasSynced) {
		return fmt.Errorf("controller: caches did not sync: %w", ctx.Err())
	}
	listed, err := c.apps.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	c.mu.Lock()
	for _, o := range listed {
		if app, ok := o.(*unstructured.Unstructured); ok && !c.observed(app) {
			c.pending[app.GetUID()] = true
		}
	}
	if len(c.pending) == 0 {
		close(c.done)
	}
	c.mu.Unlock()

	failed := make(chan error, 1)
	for range *workers {
		go func() {
			for c.next(ctx, failed) {
			}
		}()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-failed:
		return fmt.Errorf("controller: %w", err)
	case <-c.done:
	}
	peak, err := vmHWM(os.Getpid())
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	anon, file, err := rssSplit(os.Getpid())
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	cpu, err := cpuSeconds(os.Getpid())
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	rep := limitReport{Objects: len(listed), Seconds: time.Since(start).Seconds(), PeakRSSBytes: peak,
		RSSAnonBytes: anon, RSSFileBytes: file, CPUSeconds: cpu}
	if err := json.NewEncoder(stdout).Encode(rep); err != nil {
		return fmt.Errorf("controller: report: %w", err)
	}
	return nil
}

// enqueueOwner enqueues the BenchApp that controls a child.
func (c *controllerClient) enqueueOwner(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && ref.Kind == "BenchApp" {
		c.queue.Add(m.GetNamespace() + "/" + ref.Name)
	}
}

// next serves one key of the queue; false when the queue is shut down.
// A failed key is retried with back-off; the first failure is also sent
// on failed, which ends the run: the bench wants a measure, not a
// controller that limps on.
func (c *controllerClient) next(ctx context.Context, failed chan<- error) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			select {
			case failed <- fmt.Errorf("sync %s: %w", key, err):
			default:
			}
		}
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync brings the BenchApp key and its children to what the limit writes.
func (c *controllerClient) sync(ctx context.Context, key string) error {
	_, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	obj, err := c.apps.Get(name)
	if apierrors.IsNotFound(err) {
		return nil // deleted: its children go with it (owner references)
	}
	if err != nil {
		return err
	}
	app, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("unexpected %T in the BenchApps' cache", obj)
	}
	opts := metav1.ApplyOptions{FieldManager: limitManager, Force: true}
	children := []struct {
		gvr   schema.GroupVersionResource
		cache cache.Indexer
		build func(benchKind, *unstructured.Unstructured) *unstructured.Unstructured
	}{
		{deploymentGVR, c.deployments, limitDeployment},
		{serviceGVR, c.services, limitService},
	}
	for _, ch := range children {
		desired := ch.build(c.kind, app)
		id := desired.GetKind() + "/" + desired.GetName()
		hash := desired.GetAnnotations()[ownership.AnnotationHash]
		if c.upToDate(ch.cache, id, app.GetNamespace()+"/"+desired.GetName(), hash) {
			continue
		}
		if _, err := c.dyn.Resource(ch.gvr).Namespace(app.GetNamespace()).Apply(ctx, desired.GetName(), desired, opts); err != nil {
			return fmt.Errorf("apply %s: %w", id, err)
		}
		c.mu.Lock()
		c.applied[id] = hash
		c.mu.Unlock()
	}
	c.mu.Lock()
	skip := c.observed(app) || c.written[app.GetUID()] == app.GetGeneration()
	if c.observed(app) {
		delete(c.written, app.GetUID()) // met: the cache shows it
	}
	c.mu.Unlock()
	if !skip {
		st := limitStatus(c.kind, app, time.Now())
		if _, err := c.dyn.Resource(benchAppGVR).Namespace(app.GetNamespace()).ApplyStatus(ctx, st.GetName(), st, opts); err != nil {
			return fmt.Errorf("apply status: %w", err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !skip {
		c.written[app.GetUID()] = app.GetGeneration()
	}
	if c.pending[app.GetUID()] {
		delete(c.pending, app.GetUID())
		if len(c.pending) == 0 {
			close(c.done)
		}
	}
	return nil
}

// upToDate reports whether the child id (cache key key) carries hash, in
// the informer's cache or as the last apply left it; an expectation the
// cache meets is dropped.
func (c *controllerClient) upToDate(children cache.Indexer, id, key, hash string) bool {
	if o, exists, err := children.GetByKey(key); err == nil && exists {
		if m, ok := o.(metav1.Object); ok && m.GetAnnotations()[ownership.AnnotationHash] == hash {
			c.mu.Lock()
			delete(c.applied, id) // met: the cache shows it
			c.mu.Unlock()
			return true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.applied[id] == hash
}

// observed reports whether app's status is of its generation.
func (c *controllerClient) observed(app *unstructured.Unstructured) bool {
	g, found, _ := unstructured.NestedInt64(app.Object, "status", "observedGeneration")
	return found && g == app.GetGeneration()
}

// stripManagedFields is the informers' transform that drops managedFields
// before an object is cached.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
