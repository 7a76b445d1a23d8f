package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
)

// limitReport is what the limit prints, as one JSON line, after its cold
// pass.
type limitReport struct {
	Objects      int     `json:"objects"`
	Seconds      float64 `json:"seconds"`
	PeakRSSBytes int64   `json:"peakRSSBytes"`
	RSSAnonBytes int64   `json:"rssAnonBytes"`
	RSSFileBytes int64   `json:"rssFileBytes"`
	CPUSeconds   float64 `json:"cpuSeconds"`
}

// limitClient is the limit: the requests the work needs and nothing else.
// Cold, one LIST of the BenchApps, then per object one apply of the
// Deployment, one of the Service and one of the status. Following (for the
// change measurements), one LIST of one object for the current version and
// one WATCH from it, then per change the Deployment and the status, and the
// Service only when spec.ports changed.
type limitClient struct {
	kind      benchKind
	dyn       dynamic.Interface
	namespace string
	workers   int

	mu    sync.Mutex
	ports map[string][]any // spec.ports of each Service last applied
}

// runLimit is `bench limit`: the cold pass, its report on stdout, and with
// -follow, after a line on stdin, the changes until it is stopped.
func runLimit(ctx context.Context, args []string, stdout io.Writer) error {
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
	kind, err := kindNamed(*kindName)
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

	list, err := dyn.Resource(benchAppGVR).Namespace(l.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("limit: list BenchApps in %s: %w", l.namespace, err)
	}
	err = forEach(ctx, len(list.Items), l.workers, func(ctx context.Context, i int) error {
		return l.serve(ctx, &list.Items[i])
	})
	if err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	peak, err := vmHWM(os.Getpid())
	if err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	anon, file, err := rssSplit(os.Getpid())
	if err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	cpu, err := cpuSeconds(os.Getpid())
	if err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	rep := limitReport{Objects: len(list.Items), Seconds: time.Since(start).Seconds(), PeakRSSBytes: peak,
		RSSAnonBytes: anon, RSSFileBytes: file, CPUSeconds: cpu}
	if err := json.NewEncoder(stdout).Encode(rep); err != nil {
		return fmt.Errorf("limit: report: %w", err)
	}
	if !*follow {
		return nil
	}
	// The bench reads its request counters between the cold pass and the
	// watch, then says go.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("limit: wait for the bench: %w", err)
	}
	// Not from the cold LIST's version: kube-apiserver compacts etcd
	// every 5 minutes, and a cold pass that outlives a compaction (535 s
	// at N=10,000 on a busy machine) would watch from a version that is
	// gone (410), which ends the watch. Every object is served by now and
	// nothing changes until the bench patches: the watch starts from the
	// current version, read with a LIST of one object (before the bench
	// times the changes).
	now, err := dyn.Resource(benchAppGVR).Namespace(l.namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("limit: list BenchApps in %s: %w", l.namespace, err)
	}
	return l.follow(ctx, now.GetResourceVersion())
}

// serve applies app's Deployment, its Service unless its ports are the ones
// last applied, and its status.
func (l *limitClient) serve(ctx context.Context, app *unstructured.Unstructured) error {
	opts := metav1.ApplyOptions{FieldManager: limitManager, Force: true}
	d := limitDeployment(l.kind, app)
	if _, err := l.dyn.Resource(deploymentGVR).Namespace(l.namespace).Apply(ctx, d.GetName(), d, opts); err != nil {
		return fmt.Errorf("apply Deployment %s/%s: %w", l.namespace, d.GetName(), err)
	}
	ports, _, _ := unstructured.NestedSlice(app.Object, "spec", "ports")
	l.mu.Lock()
	last, seen := l.ports[app.GetName()]
	l.mu.Unlock()
	if !seen || !reflect.DeepEqual(last, ports) {
		s := limitService(l.kind, app)
		if _, err := l.dyn.Resource(serviceGVR).Namespace(l.namespace).Apply(ctx, s.GetName(), s, opts); err != nil {
			return fmt.Errorf("apply Service %s/%s: %w", l.namespace, s.GetName(), err)
		}
		l.mu.Lock()
		l.ports[app.GetName()] = ports
		l.mu.Unlock()
	}
	st := limitStatus(l.kind, app, time.Now())
	if _, err := l.dyn.Resource(benchAppGVR).Namespace(l.namespace).ApplyStatus(ctx, st.GetName(), st, opts); err != nil {
		return fmt.Errorf("apply status of BenchApp %s/%s: %w", l.namespace, st.GetName(), err)
	}
	return nil
}

// follow watches the BenchApps from rv and serves each one whose generation
// is not observed yet, l.workers at a time, the latest version of each.
func (l *limitClient) follow(ctx context.Context, rv string) error {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return l.dyn.Resource(benchAppGVR).Namespace(l.namespace).Watch(ctx, o)
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
