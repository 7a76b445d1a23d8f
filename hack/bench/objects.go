package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

var (
	benchAppGVR   = schema.GroupVersionResource{Group: "bench.tmplop.io", Version: "v1", Resource: "benchapps"}
	deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	serviceGVR    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// createConcurrency is how many requests the bench sends at once when it
// creates or changes all N objects.
const createConcurrency = 50

// appName names the i-th BenchApp; the padding keeps them in order.
func appName(i int) string { return fmt.Sprintf("app-%05d", i) }

// newBenchApp is the object both the limit and the operator serve: a
// Deployment of spec.size replicas and a ClusterIP Service on port 80.
func newBenchApp(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.tmplop.io/v1",
		"kind":       "BenchApp",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"size":  int64(1),
			"image": "nginx:1.27",
			"ports": []any{map[string]any{"port": int64(80)}},
		},
	}}
}

// installCRD applies the BenchApp CRD from path and waits until it is served.
func installCRD(ctx context.Context, dyn dynamic.Interface, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("install CRD: %w", err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		return fmt.Errorf("install CRD: decode %s: %w", path, err)
	}
	if _, err := dyn.Resource(crdGVR).Apply(ctx, crd.GetName(), crd, metav1.ApplyOptions{FieldManager: "bench", Force: true}); err != nil {
		return fmt.Errorf("install CRD %s: %w", crd.GetName(), err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(benchAppGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("install CRD %s: not served: %w", crd.GetName(), err)
	}
	return nil
}

func createNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// createBenchApps creates namespace ns and N BenchApps in it.
func createBenchApps(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, ns string, n int) error {
	if err := createNamespace(ctx, cs, ns); err != nil {
		return err
	}
	return forEach(ctx, n, createConcurrency, func(ctx context.Context, i int) error {
		app := newBenchApp(ns, appName(i))
		if _, err := dyn.Resource(benchAppGVR).Namespace(ns).Create(ctx, app, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create BenchApp %s/%s: %w", ns, app.GetName(), err)
		}
		return nil
	})
}

// patchSize sets spec.size of one BenchApp and returns its new generation.
func patchSize(ctx context.Context, dyn dynamic.Interface, ns, name string, size int64) (int64, error) {
	patch := fmt.Appendf(nil, `{"spec":{"size":%d}}`, size)
	got, err := dyn.Resource(benchAppGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("patch spec.size of BenchApp %s/%s: %w", ns, name, err)
	}
	return got.GetGeneration(), nil
}

// forEach calls f for 0..n-1 on workers goroutines and returns the first
// error, after which no further call starts.
func forEach(parent context.Context, n, workers int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		next  atomic.Int64
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		return parent.Err()
	}
	return first
}
