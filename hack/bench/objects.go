package main

import (
	"context"
	"fmt"
	"os"
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

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// createConcurrency is how many requests the bench sends at once when it
// creates or changes all N objects.
const createConcurrency = 50

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
		_, err := dyn.Resource(benchapp.GVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
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
	return benchapp.ForEach(ctx, n, createConcurrency, func(ctx context.Context, i int) error {
		app := benchapp.New(ns, benchapp.Name(i))
		if _, err := dyn.Resource(benchapp.GVR).Namespace(ns).Create(ctx, app, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create BenchApp %s/%s: %w", ns, app.GetName(), err)
		}
		return nil
	})
}

// patchSize sets spec.size of one BenchApp and returns its new generation.
func patchSize(ctx context.Context, dyn dynamic.Interface, ns, name string, size int64) (int64, error) {
	patch := fmt.Appendf(nil, `{"spec":{"size":%d}}`, size)
	got, err := dyn.Resource(benchapp.GVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("patch spec.size of BenchApp %s/%s: %w", ns, name, err)
	}
	return got.GetGeneration(), nil
}
