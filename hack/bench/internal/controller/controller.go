// Package controller is the hand-written controller for the BenchApp
// that the bench (-controller) measures the operator against. It runs as a
// binary of its own (hack/bench/cmd/controller), a child of the bench.
package controller

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

// controllerClient is the controller an expert would write by hand for the
// BenchApp, in the shape of client-go's sample-controller and of
// kube-controller-manager's controllers, so that the operator is measured
// against the best hand-written code for the one kind, not an easy one. It
// writes exactly what the limit writes, built by the same code
// (benchapp.Deployment, benchapp.Service, benchapp.Status), and skips what
// is already so: a child whose hash annotation is the desired one, a
// status whose observedGeneration is the generation. Each choice, and why:
//
//   - Informers, listers: it reads only its caches, never a live GET. No
//     resync (0): nothing here is level-triggered by time.
//   - The Deployments and Services through typed informers of one
//     SharedInformerFactory, scoped to the namespace, with the managed-by
//     label as a server-side selector (the API server sends only its own
//     children), read as protobuf (ContentType
//     application/vnd.kubernetes.protobuf, accepting protobuf then JSON):
//     smaller on the wire and cheaper to decode than JSON into maps. The
//     operator, generic, reads every kind as JSON into unstructured maps; a
//     controller for built-in kinds reads protobuf, so this is the stronger
//     side of the comparison.
//   - The BenchApps, a CRD (JSON only: custom resources have no protobuf),
//     through a dynamic informer whose transform keeps a small benchApp of
//     the fields the controller reads (cache.go): the informer
//     holds every BenchApp for the whole run, and an unstructured object's
//     maps of metadata, managedFields and status are most of its bytes. The
//     children's caches drop managedFields (stripManagedFields).
//   - A typed rate-limited work queue of cache.ObjectName (the default
//     controller rate limiter) and 10 workers (-workers, the operator's and
//     the limit's count); no goroutine per object. A child's event enqueues
//     its controller (owner reference); a BenchApp's update only when its
//     generation changed or its status is not of its generation (the echo of
//     its own status write is not work); a delete drops what it remembers.
//   - Expectations, as the ReplicaSet controller's: it remembers the hash
//     it applied of each child and the generation whose status it wrote
//     until its informers show them, so that the echo of its own write,
//     which may come before the cache has the other child, does not send
//     the write again. It also remembers the desired hashes of a
//     generation, so that an echo costs a cache lookup, not a build and a
//     hash (a BenchApp's children depend only on its name, UID and spec,
//     and the spec changes only with the generation).
//   - Writes: server-side apply, field manager limit, force, as the limit
//     and the operator. The children's applies go through the typed
//     clientset as the same apply patch the dynamic client sends (the same
//     JSON body), so their responses come back as protobuf; the status goes
//     through the dynamic client (a CRD).
//   - Client settings as the operator's defaults (cmd/operator/app run
//     flags): no client-side rate limit (QPS -1, Burst 0: the workers bound
//     what is in flight and the API server's Priority and Fairness shares
//     it), no response compression (--api-compression=false), one HTTP
//     client shared by both clientsets. The Go runtime at its defaults
//     (GOGC, GOMEMLIMIT), as the operator runs here: it sets GOMEMLIMIT only
//     from a container's memory limit, and the bench runs in none.
//
// Against the limit it shows what watching costs any controller: the
// informers' lists, watches, decoding and caches. Against the operator, what
// the template engine costs on top of a controller written for one kind.
type controllerClient struct {
	kind      benchapp.Kind
	cs        kubernetes.Interface
	dyn       dynamic.Interface
	namespace string

	apps        cache.Indexer // of *benchApp
	deployments cache.Indexer
	services    cache.Indexer
	queue       workqueue.TypedRateLimitingInterface[cache.ObjectName]

	mu sync.Mutex
	// state is what the controller remembers of each BenchApp.
	state map[cache.ObjectName]*appMemo
	// pending are the BenchApps listed at the start whose status is not
	// yet written; done is closed when none is left.
	pending map[cache.ObjectName]bool
	done    chan struct{}
}

// The children, in the order of appMemo's arrays.
const (
	childDeployment = iota
	childService
	children
)

// appMemo is what the controller remembers of one BenchApp between syncs.
type appMemo struct {
	uid types.UID
	// generation is the one desired's hashes are of.
	generation int64
	// desired is the hash of each child at generation ("" until built).
	desired [children]string
	// applied is the hash last applied of each child, until the cache
	// shows it ("" then).
	applied [children]string
	// statusOf is the generation whose status was last written, until the
	// cache shows it (0 then).
	statusOf int64
}

// protobuf is what the typed clientset sends and asks for: protobuf, then
// JSON for what has no protobuf form.
const (
	protobuf       = runtime.ContentTypeProtobuf
	acceptProtobuf = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
)

// controllerConfig is cfg as the controller's clients use it: the
// operator's default client settings, and the typed clientset's copy
// speaking protobuf.
func controllerConfig(cfg *rest.Config) (dyn, typed *rest.Config) {
	dyn = rest.CopyConfig(cfg)
	dyn.QPS, dyn.Burst = -1, 0
	dyn.DisableCompression = true
	dyn.UserAgent = "bench-controller"
	typed = rest.CopyConfig(dyn)
	typed.ContentType, typed.AcceptContentTypes = protobuf, acceptProtobuf
	return dyn, typed
}

// Run is the hand-written controller with its command line (args, without
// the program's name): its cold pass, and its report (a benchapp.Report) on
// stdout once it has written the status of every BenchApp its first list
// held.
func Run(ctx context.Context, args []string, stdout io.Writer) error {
	start := time.Now()
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the controller's identity")
	namespace := fs.String("namespace", "limit", "namespace of the BenchApps")
	workers := fs.Int("workers", 10, "objects served at once")
	kindName := fs.String("kind", "folder", "the kind whose objects to write: folder or chart")
	if err := fs.Parse(args); err != nil {
		return err
	}
	kind, err := benchapp.KindNamed(*kindName)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	loaded, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("controller: load kubeconfig %s: %w", *kubeconfig, err)
	}
	dynCfg, typedCfg := controllerConfig(loaded)
	hc, err := rest.HTTPClientFor(dynCfg)
	if err != nil {
		return fmt.Errorf("controller: http client: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(dynCfg, hc)
	if err != nil {
		return fmt.Errorf("controller: dynamic client: %w", err)
	}
	cs, err := kubernetes.NewForConfigAndClient(typedCfg, hc)
	if err != nil {
		return fmt.Errorf("controller: clientset: %w", err)
	}
	c := &controllerClient{
		kind: kind, cs: cs, dyn: dyn, namespace: *namespace,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "benchapps"}),
		state: map[cache.ObjectName]*appMemo{}, pending: map[cache.ObjectName]bool{},
		done: make(chan struct{}),
	}
	defer c.queue.ShutDown()

	apps := dynamicinformer.NewFilteredDynamicInformer(dyn, benchapp.GVR, c.namespace, 0, cache.Indexers{}, nil).Informer()
	if err := apps.SetTransform(toBenchApp); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(c.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = ownership.LabelManagedBy + "=" + benchapp.Manager
		}), informers.WithTransform(stripManagedFields))
	deployments := factory.Apps().V1().Deployments().Informer()
	services := factory.Core().V1().Services().Informer()
	c.apps, c.deployments, c.services = apps.GetIndexer(), deployments.GetIndexer(), services.GetIndexer()

	if _, err := apps.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.appUpdated,
		DeleteFunc: c.enqueue,
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
	// The informers stop with the run: Shutdown waits for them, so the
	// context is canceled first.
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	go apps.RunWithContext(ctx)
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), apps.HasSynced, deployments.HasSynced, services.HasSynced) {
		return fmt.Errorf("controller: caches did not sync: %w", ctx.Err())
	}
	listed := c.apps.List()
	c.mu.Lock()
	for _, o := range listed {
		if app, ok := o.(*benchApp); ok && !app.upToDate() {
			c.pending[cache.MetaObjectToName(app)] = true
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
	if err := benchapp.WriteReport(stdout, len(listed), start); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	return nil
}

// enqueue enqueues a BenchApp (or its tombstone).
func (c *controllerClient) enqueue(obj any) {
	if name, err := cache.DeletionHandlingObjectToName(obj); err == nil {
		c.queue.Add(name)
	}
}

// appUpdated enqueues an updated BenchApp whose spec changed (its
// generation) or whose status is not of its generation; any other update
// (the echo of its own status write, a label) changes nothing it writes.
func (c *controllerClient) appUpdated(old, cur any) {
	o, ok1 := old.(*benchApp)
	n, ok2 := cur.(*benchApp)
	if ok1 && ok2 && o.Generation == n.Generation && n.upToDate() {
		return
	}
	c.enqueue(cur)
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
		c.queue.Add(cache.ObjectName{Namespace: m.GetNamespace(), Name: ref.Name})
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
// The work queue hands a key to one worker at a time, so that key's
// appMemo has one writer; c.mu guards the maps.
func (c *controllerClient) sync(ctx context.Context, key cache.ObjectName) error {
	obj, exists, err := c.apps.GetByKey(key.String())
	if err != nil {
		return err
	}
	if !exists {
		// Deleted: its children go with it (owner references), and
		// what was remembered of it with them.
		c.mu.Lock()
		delete(c.state, key)
		c.mu.Unlock()
		return nil
	}
	app, ok := obj.(*benchApp)
	if !ok {
		return fmt.Errorf("unexpected %T in the BenchApps' cache", obj)
	}
	c.mu.Lock()
	st := c.state[key]
	if st == nil || st.uid != app.UID {
		st = &appMemo{uid: app.UID}
		c.state[key] = st
	}
	c.mu.Unlock()
	if st.generation != app.Generation {
		st.generation, st.desired = app.Generation, [children]string{}
	}

	var u *unstructured.Unstructured // app as the builders take it, once needed
	for i, child := range [children]struct {
		cache cache.Indexer
		build func(benchapp.Kind, *unstructured.Unstructured) *unstructured.Unstructured
		apply func(ctx context.Context, name string, data []byte) error
	}{
		childDeployment: {c.deployments, benchapp.Deployment, c.applyDeployment},
		childService:    {c.services, benchapp.Service, c.applyService},
	} {
		var desired *unstructured.Unstructured
		if st.desired[i] == "" {
			if u == nil {
				u = app.unstructured()
			}
			desired = child.build(c.kind, u)
			st.desired[i] = desired.GetAnnotations()[ownership.AnnotationHash]
		}
		// A child has its BenchApp's name and namespace, so the same key.
		if cachedHash(child.cache, key.String()) == st.desired[i] {
			st.applied[i] = "" // met: the cache shows it
			continue
		}
		if st.applied[i] == st.desired[i] {
			continue // applied; the cache has not caught up yet
		}
		if desired == nil {
			if u == nil {
				u = app.unstructured()
			}
			desired = child.build(c.kind, u)
		}
		data, err := desired.MarshalJSON()
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", desired.GetKind(), key, err)
		}
		if err := child.apply(ctx, desired.GetName(), data); err != nil {
			return fmt.Errorf("apply %s %s: %w", desired.GetKind(), key, err)
		}
		st.applied[i] = st.desired[i]
	}

	switch {
	case app.upToDate():
		st.statusOf = 0 // met: the cache shows it
	case st.statusOf == app.Generation:
		// written; the cache has not caught up yet
	default:
		if u == nil {
			u = app.unstructured()
		}
		status := benchapp.Status(c.kind, u, time.Now())
		opts := metav1.ApplyOptions{FieldManager: benchapp.Manager, Force: true}
		if _, err := c.dyn.Resource(benchapp.GVR).Namespace(key.Namespace).ApplyStatus(ctx, key.Name, status, opts); err != nil {
			return fmt.Errorf("apply status of BenchApp %s: %w", key, err)
		}
		st.statusOf = app.Generation
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[key] {
		delete(c.pending, key)
		if len(c.pending) == 0 {
			close(c.done)
		}
	}
	return nil
}

// applyOptions are the children's apply's: the limit's field manager, forced.
var applyOptions = metav1.PatchOptions{FieldManager: benchapp.Manager, Force: ptr.To(true)}

// applyDeployment server-side applies a Deployment (data: its JSON, the
// body the dynamic client's Apply sends); the response is protobuf.
func (c *controllerClient) applyDeployment(ctx context.Context, name string, data []byte) error {
	_, err := c.cs.AppsV1().Deployments(c.namespace).Patch(ctx, name, types.ApplyPatchType, data, applyOptions)
	return err
}

// applyService is applyDeployment's for a Service.
func (c *controllerClient) applyService(ctx context.Context, name string, data []byte) error {
	_, err := c.cs.CoreV1().Services(c.namespace).Patch(ctx, name, types.ApplyPatchType, data, applyOptions)
	return err
}

// cachedHash is the hash annotation of the child key in a children's
// cache, "" if it is not there.
func cachedHash(children cache.Indexer, key string) string {
	o, exists, err := children.GetByKey(key)
	if err != nil || !exists {
		return ""
	}
	m, ok := o.(metav1.Object)
	if !ok {
		return ""
	}
	return m.GetAnnotations()[ownership.AnnotationHash]
}
