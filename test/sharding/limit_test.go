package sharding

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// moveLimit is the least a move of a killed shard's objects and a change
// to each can cost on this control plane: a minimal client, not an
// operator, that for each of n objects does only the writes any design
// that labels its objects must do once the old shard is known dead, in
// the order they depend on one another:
//
//  1. the parent's shard label (a merge patch on its resourceVersion);
//  2. its child applied with the changed value, carrying the new holder's
//     label (the relabel and the change in one write);
//  3. its status applied.
//
// It keeps inFlight objects' writes going at once (the sharder keeps 16
// for a dead shard), to objects of a namespace no replica watches, set up
// first and not timed.
// The time is what the "lease duration + 5 s" leaves to the work
// after the Lease expired; where the limit alone takes longer than 5 s,
// no client meets the bound on this machine at this scale.
type moveLimit struct {
	objects  int
	inFlight int
	elapsed  time.Duration
	writes   int
	failures int
}

// limitInFlight are the concurrencies the limit is measured at: the
// sharder's for a dead shard (engine/shard's moveWriters), and four times
// that, in case the API server takes more writes a second with more in
// flight; the faster one is the limit.
var limitInFlight = []int{16, 64}

func measureMoveLimit(t *testing.T, n, inFlight int) moveLimit {
	t.Helper()
	ns := env.Namespace(t)
	names := objectNames(n)
	rv := make(map[string]string, n)
	var mu sync.Mutex
	err := inParallel(t.Context(), names, func(ctx context.Context, name string) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": shardies.GroupVersion().String(),
			"kind":       kind,
			"metadata":   map[string]any{"name": name, "namespace": ns, "labels": map[string]any{shardLabel: "dead"}},
			"spec":       map[string]any{"value": name + "/2"},
		}}
		created, err := dyn.Resource(shardies).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create %s/%s: %w", ns, name, err)
		}
		if _, err := dyn.Resource(configMaps).Namespace(ns).Apply(ctx, name, limitChild(ns, name, name, "dead"), metav1.ApplyOptions{FieldManager: "limit", Force: true}); err != nil {
			return fmt.Errorf("apply ConfigMap %s/%s: %w", ns, name, err)
		}
		mu.Lock()
		rv[name] = created.GetResourceVersion()
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	res := moveLimit{objects: n, inFlight: inFlight}
	var failures sync.Map
	start := time.Now()
	work := make(chan string)
	var wg sync.WaitGroup
	for range inFlight {
		wg.Go(func() {
			for name := range work {
				if err := limitMove(t.Context(), ns, name, rv[name]); err != nil {
					failures.Store(name, err)
				}
			}
		})
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
	res.elapsed = time.Since(start)
	res.writes = 3 * n
	failures.Range(func(k, v any) bool {
		res.failures++
		if res.failures <= 3 {
			t.Errorf("limit: %s: %v", k, v)
		}
		return true
	})
	return res
}

// limitMove is one object's writes (see moveLimit).
func limitMove(ctx context.Context, ns, name, rv string) error {
	label := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"labels":{%q:"live"}}}`, rv, shardLabel)
	if _, err := dyn.Resource(shardies).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(label), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label: %w", err)
	}
	if _, err := dyn.Resource(configMaps).Namespace(ns).Apply(ctx, name, limitChild(ns, name, name+"/2", "live"), metav1.ApplyOptions{FieldManager: "limit", Force: true}); err != nil {
		return fmt.Errorf("child: %w", err)
	}
	status := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": shardies.GroupVersion().String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"status": map[string]any{
			"value":              name + "/2",
			"observedGeneration": int64(1),
			"conditions": []any{map[string]any{
				"type": "Reconciled", "status": "True", "reason": "Applied", "message": "1 child applied",
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": int64(1),
			}},
		},
	}}
	if _, err := dyn.Resource(shardies).Namespace(ns).ApplyStatus(ctx, name, status, metav1.ApplyOptions{FieldManager: "limit", Force: true}); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return nil
}

// limitChild is the ConfigMap of the limit's object name, held by holder.
func limitChild(ns, name, value, holder string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns,
			"labels": map[string]any{managedBy: "limit", heldByLabel: holder}},
		"data": map[string]any{"value": value},
	}}
}
