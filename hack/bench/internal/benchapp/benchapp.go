// Package benchapp is the BenchApp as the bench and its clients share it:
// the resources, the objects the bench creates, what serving one writes
// (writes.go, the limit's and the hand-written controller's writes) and the
// report a client prints after its cold pass. The clients are binaries of
// their own (hack/bench/cmd/limit, hack/bench/cmd/controller) so that their
// resident file pages are their own code's, not the bench's: this package
// and what it imports are linked into them, so it holds nothing else.
package benchapp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/hack/bench/internal/procfs"
)

// The resources the BenchApp's clients read and write.
var (
	GVR           = schema.GroupVersionResource{Group: "bench.tmplop.io", Version: "v1", Resource: "benchapps"}
	DeploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	ServiceGVR    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
)

// Name names the i-th BenchApp; the padding keeps them in order.
func Name(i int) string { return fmt.Sprintf("app-%05d", i) }

// New is the object the limit, the operator and the controller serve: a
// Deployment of spec.size replicas and a ClusterIP Service on port 80.
func New(ns, name string) *unstructured.Unstructured {
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

// Report is what a client (the limit, the hand-written controller) prints,
// as one JSON line on its stdout, after its cold pass: its own count and
// figures, read from /proc while it runs (the kernel forgets the peak at
// exit).
type Report struct {
	Objects      int     `json:"objects"`
	Seconds      float64 `json:"seconds"`
	PeakRSSBytes int64   `json:"peakRSSBytes"`
	RSSAnonBytes int64   `json:"rssAnonBytes"`
	RSSFileBytes int64   `json:"rssFileBytes"`
	CPUSeconds   float64 `json:"cpuSeconds"`
}

// WriteReport measures this process, which served objects since start, and
// writes its Report to w.
func WriteReport(w io.Writer, objects int, start time.Time) error {
	pid := os.Getpid()
	peak, err := procfs.VmHWM(pid)
	if err != nil {
		return err
	}
	anon, file, err := procfs.RSSSplit(pid)
	if err != nil {
		return err
	}
	cpu, err := procfs.CPUSeconds(pid)
	if err != nil {
		return err
	}
	rep := Report{Objects: objects, Seconds: time.Since(start).Seconds(), PeakRSSBytes: peak,
		RSSAnonBytes: anon, RSSFileBytes: file, CPUSeconds: cpu}
	if err := json.NewEncoder(w).Encode(rep); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// ForEach calls f for 0..n-1 on workers goroutines and returns the first
// error, after which no further call starts.
func ForEach(parent context.Context, n, workers int, f func(ctx context.Context, i int) error) error {
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
