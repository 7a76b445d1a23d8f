package chart

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/tmplop/operator/engine/render"
)

// work is the budget of what Dots does for one render before the
// templates run: the object's values, Helm's copies of them, the
// dependencies and the schema's validation. It is the render's budget
// (render.Budget): what work spends, the render does not have
// (render.Spent), so that a chart's object is held to one budget, as a
// folder's is.
//
// Time is measured and checked between steps (and at every step of a
// schema's validation); Helm's coalescing cannot be stopped once started,
// so what it may allocate is charged before it starts (valuesCost),
// bounded by the object's values, which are the tenant's.
type work struct {
	ctx      context.Context
	start    time.Time
	deadline time.Time
	b        render.Budget
	spent    int64 // bytes charged
}

func newWork(ctx context.Context, b render.Budget) *work {
	b = b.WithDefaults()
	now := time.Now()
	return &work{ctx: ctx, start: now, deadline: now.Add(b.Timeout), b: b}
}

// check returns the budget error that stops the work: past the deadline,
// or its context done. file is where the work was.
func (w *work) check(file string) error {
	if err := w.ctx.Err(); err != nil {
		return render.BudgetExceeded(file, &render.BudgetError{Budget: render.BudgetCanceled, Detail: "before the templates ran"})
	}
	if !time.Now().Before(w.deadline) {
		return render.BudgetExceeded(file, &render.BudgetError{Budget: render.BudgetTime, Limit: int64(w.b.Timeout),
			Detail: fmt.Sprintf("%s before the templates ran", time.Since(w.start).Round(time.Millisecond))})
	}
	return nil
}

// charge counts n bytes against the render's output budget, refused
// before the work that would allocate them; what says what they are.
func (w *work) charge(file string, n int64, what func() string) error {
	if n < 0 || w.spent+n > w.b.MaxOutputBytes {
		return render.BudgetExceeded(file, &render.BudgetError{Budget: render.BudgetOutput, Limit: w.b.MaxOutputBytes, Detail: what()})
	}
	w.spent += n
	return nil
}

// done is what the work took, for the render to start with.
func (w *work) done() render.Spent {
	return render.Spent{Time: time.Since(w.start), Bytes: w.spent}
}

// What copying values costs, calibrated on what copystructure (Helm's
// copies) allocates, which is more than our own copyValue: about 1.5 KB
// to start, up to about 1,200 bytes a map or list in a deep nest, 450 a
// map entry or list element; strings are shared, not copied
// (TestValuesCostCoversHelm).
const (
	copyCost  = 2048 // a copy
	nodeCost  = 1024 // a map or a list
	entryCost = 256  // a map entry or a list element
	leafCost  = 16   // a scalar's interface
)

// maxValuesDepth bounds how deep values nest: Helm's copies take time
// that grows faster than the depth (copystructure walks a stack of the
// levels above), and real values nest a dozen levels at most.
const maxValuesDepth = 256

// valuesCost is what one copy of values v allocates, at most, or false
// when it passes limit or nests deeper than maxValuesDepth (deep): the
// walk stops there, so its own cost is bounded by the limit, not by the
// values.
func valuesCost(v any, limit int64) (cost int64, ok, deep bool) {
	type item struct {
		v     any
		depth int
	}
	cost = copyCost
	stack := []item{{v, 0}}
	for len(stack) > 0 && cost <= limit {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.depth > maxValuesDepth {
			return cost, false, true
		}
		switch t := it.v.(type) {
		case map[string]any:
			cost += nodeCost
			for _, e := range t {
				if cost += entryCost; cost > limit {
					break
				}
				stack = append(stack, item{e, it.depth + 1})
			}
		case []any:
			cost += nodeCost
			for _, e := range t {
				if cost += entryCost; cost > limit {
					break
				}
				stack = append(stack, item{e, it.depth + 1})
			}
		default:
			cost += leafCost
		}
	}
	return cost, cost <= limit, false
}

// copies is how many times Helm copies the object's values for one
// render of c (every chart enabled): once to find the enabled subcharts
// at each chart that lists dependencies (processDependencyEnabled), once
// to coalesce them (ToRenderValues); and once ours (values).
func copies(c *helmchart.Chart) int64 {
	n := int64(2)
	each(c, c.Name(), func(sub *helmchart.Chart, _ string) {
		if len(sub.Metadata.Dependencies) > 0 {
			n++
		}
	})
	return n
}

// checkChartValues refuses a chart whose own values would make every
// render copy more than maxChartValuesCost, whatever the object, or nest
// deeper than maxValuesDepth. Each chart's values are copied by
// copyChart, by every copy of the object's values (coalesced with them),
// and again for import-values at each chart that lists dependencies.
func checkChartValues(c *helmchart.Chart) error {
	var total int64
	passes := copies(c) + copies(c) - 2
	var err error
	each(c, c.Name(), func(sub *helmchart.Chart, full string) {
		if err != nil {
			return
		}
		n, _, deep := valuesCost(sub.Values, maxChartValuesCost)
		file := path.Join(strings.TrimPrefix(strings.TrimPrefix(full, c.Name()), "/"), "values.yaml")
		if deep {
			err = fmt.Errorf("%s: values nest more than %d levels deep", file, maxValuesDepth)
			return
		}
		if total += n * passes; total > maxChartValuesCost {
			err = fmt.Errorf("%s: the values of the chart and its subcharts cost more than %d bytes to copy at each render: keep values small, and data in files (.Files)", file, maxChartValuesCost)
		}
	})
	return err
}

// maxChartValuesCost bounds what a chart's own values make each render
// copy, whatever the object: the folder's part of a render, fixed at load
// and refused there when larger, since the object's part alone is charged
// to the render's budget. The largest common chart, kube-prometheus-stack
// with its subcharts, copies about 7 MiB of values at each render (117 ms);
// a chart of 16 MiB of tiny values would copy a GiB.
const maxChartValuesCost = 64 << 20
