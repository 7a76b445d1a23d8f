package main

import (
	"context"
	"fmt"
	"time"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

// editTimeout bounds the wait for one edit to converge.
const editTimeout = time.Minute

// measureEdits changes spec.size of one object at a time, a different
// object each time, and times each from the patch until the object's
// Deployment has the new replicas and its status observes the new
// generation.
func (b *bench) measureEdits(ctx context.Context, tr *tracker, ns string, n int) (*edits, error) {
	mk, err := b.mark(ctx)
	if err != nil {
		return nil, err
	}
	count := b.flags.edits
	lat := make([]time.Duration, 0, count)
	for i := range count {
		idx := i % n
		if count <= n {
			idx = i * n / count // spread over all objects
		}
		name := benchapp.Name(idx)
		size := tr.state(name).size + 1
		start := time.Now()
		if _, err := patchSize(ctx, b.dyn, ns, name, size); err != nil {
			return nil, err
		}
		wctx, cancel := context.WithTimeout(ctx, editTimeout)
		err := tr.waitOne(wctx, name, size)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("edit %d of %d: %w", i+1, count, err)
		}
		lat = append(lat, time.Since(start))
	}
	p, err := b.since(ctx, mk)
	if err != nil {
		return nil, err
	}
	e := newEdits(lat, p)
	b.logf("%s: %d edits, p50 %.3fs, p99 %.3fs, max %.3fs", ns, e.Count, e.P50, e.P99, e.Max)
	return e, nil
}

// measureBurst changes spec.size of all N objects at once (as fast as the
// bench can patch, createConcurrency at a time) and times until all have
// converged again; nil with -burst=false.
func (b *bench) measureBurst(ctx context.Context, tr *tracker, ns string, n int) (*burst, error) {
	if !b.flags.burst {
		return nil, nil
	}
	size := tr.maxSize() + 1
	tr.goal(size)
	mk, err := b.mark(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	err = benchapp.ForEach(ctx, n, createConcurrency, func(ctx context.Context, i int) error {
		_, err := patchSize(ctx, b.dyn, ns, benchapp.Name(i), size)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("burst: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, convergeTimeout(n))
	_, last, err := tr.waitAll(wctx, n)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("burst: %w", err)
	}
	p, err := b.since(ctx, mk)
	if err != nil {
		return nil, err
	}
	bu := &burst{Seconds: last.Sub(start).Seconds(), Requests: p}
	b.logf("%s: burst of %d changes converged in %.2fs", ns, n, bu.Seconds)
	return bu, nil
}
