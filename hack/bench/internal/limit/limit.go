// Package limit is the limit: a minimal client doing exactly the requests
// serving the BenchApps needs, the floor the bench measures the operator
// against. It runs as a binary of its own (hack/bench/cmd/limit), a child
// of the bench.
package limit

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/workqueue"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

// limitClient is the limit: the requests the work needs and nothing else.
// Cold, one LIST of the BenchApps, then per object one apply of the
// Deployment, one of the Service and one of the status. Following (for the
// change measurements), one LIST of one object for the current version and
// one WATCH from it, then per change the Deployment and the status, and the
// Service only when spec.ports changed.
type limitClient struct {
	kind      benchapp.Kind
	dyn       dynamic.Interface
	namespace string
	workers   int

	mu    sync.Mutex
	ports map[string][]any // spec.ports of each Service last applied
}

// Run is the limit with its command line (args, without the program's
// name): the cold pass, its report (a benchapp.Report) on stdout, and with
// -follow, after a line on stdin, the changes until ctx ends.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	start := time.Now()
	fs := flag.NewFlagSet("limit", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the limit's identity")
	namespace := fs.String("namespace", "limit", "namespace of the BenchApps")
	workers := fs.Int("workers", 10, "objects served at once")
	kindName := fs.String("kind", "folder", "the kind whose objects to write: folder or chart")
	follow := fs.Bool("follow", false, "after the cold pass and a line on stdin, serve changes until stopped")
	if err := fs.Parse(args); err != nil {
		return err
	}
	kind, err := benchapp.KindNamed(*kindName)
	if err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("limit: load kubeconfig %s: %w", *kubeconfig, err)
	}
	// No client-side rate limit: the limit is what the API server allows
	// (APF), not what a token bucket in the client allows.
	cfg.QPS, cfg.UserAgent = -1, "bench-limit"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("limit: client: %w", err)
	}
	l := &limitClient{kind: kind, dyn: dyn, namespace: *namespace, workers: *workers, ports: map[string][]any{}}

	list, err := dyn.Resource(benchapp.GVR).Namespace(l.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("limit: list BenchApps in %s: %w", l.namespace, err)
	}
	err = benchapp.ForEach(ctx, len(list.Items), l.workers, func(ctx context.Context, i int) error {
		return l.serve(ctx, &list.Items[i])
	})
	if err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	if err := benchapp.WriteReport(stdout, len(list.Items), start); err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	if !*follow {
		return nil
	}
	// The bench reads its request counters between the cold pass and the
	// watch, then says go.
	if _, err := bufio.NewReader(stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("limit: wait for the bench: %w", err)
	}
	// Not from the cold LIST's version: kube-apiserver compacts etcd
	// every 5 minutes, and a cold pass that outlives a compaction (535 s
	// at N=10,000 on a busy machine) would watch from a version that is
	// gone (410), which ends the watch. Every object is served by now and
	// nothing changes until the bench patches: the watch starts from the
	// current version, read with a LIST of one object (before the bench
	// times the changes).
	now, err := dyn.Resource(benchapp.GVR).Namespace(l.namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("limit: list BenchApps in %s: %w", l.namespace, err)
	}
	return l.follow(ctx, now.GetResourceVersion())
}

// serve applies app's Deployment, its Service unless its ports are the ones
// last applied, and its status.
func (l *limitClient) serve(ctx context.Context, app *unstructured.Unstructured) error {
	opts := metav1.ApplyOptions{FieldManager: benchapp.Manager, Force: true}
	d := benchapp.Deployment(l.kind, app)
	if _, err := l.dyn.Resource(benchapp.DeploymentGVR).Namespace(l.namespace).Apply(ctx, d.GetName(), d, opts); err != nil {
		return fmt.Errorf("apply Deployment %s/%s: %w", l.namespace, d.GetName(), err)
	}
	ports, _, _ := unstructured.NestedSlice(app.Object, "spec", "ports")
	l.mu.Lock()
	last, seen := l.ports[app.GetName()]
	l.mu.Unlock()
	if !seen || !reflect.DeepEqual(last, ports) {
		s := benchapp.Service(l.kind, app)
		if _, err := l.dyn.Resource(benchapp.ServiceGVR).Namespace(l.namespace).Apply(ctx, s.GetName(), s, opts); err != nil {
			return fmt.Errorf("apply Service %s/%s: %w", l.namespace, s.GetName(), err)
		}
		l.mu.Lock()
		l.ports[app.GetName()] = ports
		l.mu.Unlock()
	}
	st := benchapp.Status(l.kind, app, time.Now())
	if _, err := l.dyn.Resource(benchapp.GVR).Namespace(l.namespace).ApplyStatus(ctx, st.GetName(), st, opts); err != nil {
		return fmt.Errorf("apply status of BenchApp %s/%s: %w", l.namespace, st.GetName(), err)
	}
	return nil
}

// follow watches the BenchApps from rv and serves each one whose generation
// is not observed yet, l.workers at a time, the latest version of each.
func (l *limitClient) follow(ctx context.Context, rv string) error {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return l.dyn.Resource(benchapp.GVR).Namespace(l.namespace).Watch(ctx, o)
		},
	})
	if err != nil {
		return fmt.Errorf("limit: watch BenchApps in %s: %w", l.namespace, err)
	}
	defer rw.Stop()
	queue := workqueue.NewTyped[string]()
	defer queue.ShutDown()
	var (
		mu     sync.Mutex
		latest = map[string]*unstructured.Unstructured{}
		failed = make(chan error, 1)
	)
	for range l.workers {
		go func() {
			for {
				name, shutdown := queue.Get()
				if shutdown {
					return
				}
				mu.Lock()
				app := latest[name]
				mu.Unlock()
				if err := l.serve(ctx, app); err != nil && ctx.Err() == nil {
					select {
					case failed <- err:
					default:
					}
				}
				queue.Done(name)
			}
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return fmt.Errorf("limit: %w", err)
		case ev, ok := <-rw.ResultChan():
			if !ok {
				return errors.New("limit: watch of BenchApps ended")
			}
			app, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type != watch.Modified && ev.Type != watch.Added {
				continue
			}
			observed, _, _ := unstructured.NestedInt64(app.Object, "status", "observedGeneration")
			if observed == app.GetGeneration() {
				continue
			}
			mu.Lock()
			latest[app.GetName()] = app
			mu.Unlock()
			queue.Add(app.GetName())
		}
	}
}
