package catalog

import (
	"context"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tmplop/operator/engine/catalog/layout"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/render"
)

// loadChart loads the folder's Helm chart, if it is one: a Chart.yaml
// beside kind.yaml, or a packaged chart (a ConfigMap's `*.tgz` key),
// unpacked within lim. It returns nil for a folder of templates.
func loadChart(files layout.Files, spec *Spec, lim Limits) (*chart.Chart, error) {
	archive, isChart, err := chartArchive(files)
	if err != nil || !isChart {
		return nil, err
	}
	if len(spec.DependsOn) > 0 {
		return nil, fmt.Errorf("%s: dependsOn: a chart orders its children with Helm's hooks (docs/helm.md), not dependsOn", KindFile)
	}
	noStatus := fmt.Errorf("%s: a chart's status is the engine's conditions and the chart's name and version; remove %s", layout.StatusFile, layout.StatusFile)
	if _, ok := files[layout.StatusFile]; ok {
		return nil, noStatus
	}
	ch, err := chart.Load(files, chart.Options{Archive: archive, Skip: []string{KindFile, CRDFile}, Override: spec.OverrideValues, MaxUnpacked: lim.MaxUnpacked})
	if err != nil {
		return nil, err
	}
	if ch.HasFile(layout.StatusFile) {
		return nil, noStatus // in the packaged chart
	}
	return ch, nil
}

// chartArchive tells whether the folder is a chart, and where its files
// are: the folder's own when it holds Chart.yaml (archive ""), the one
// `*.tgz` it holds otherwise.
func chartArchive(files layout.Files) (archive string, isChart bool, err error) {
	if _, ok := files[layout.ChartFile]; ok {
		return "", true, nil
	}
	var archives []string
	for _, name := range files.Names() {
		if layout.RoleOf(name) == layout.ChartArchive {
			archives = append(archives, name)
		}
	}
	switch len(archives) {
	case 0:
		return "", false, nil
	case 1:
		return archives[0], true, nil
	}
	return "", false, fmt.Errorf("%v: a kind folder holds one packaged chart", archives)
}

// Rendered is one render of a kind's children, with the order they are
// applied in: a template (a group of children) waits for the children of
// those DependsOn names to be Current. A folder's order is its kind.yaml
// dependsOn; a chart's comes from its hooks.
type Rendered struct {
	*render.Result
	DependsOn map[string][]string
	// DeleteHooks are a chart's pre-delete hooks: applied when the object
	// is deleted, before its children go (reconcile's finalize).
	DeleteHooks []render.Manifest
	// PostDeleteHooks are a chart's post-delete hooks: applied when the
	// object is deleted, after its other children are gone.
	PostDeleteHooks []render.Manifest
}

// Children renders the children of in.Object: a folder's templates, or a
// chart's as Helm would for that object on cluster cl (chart.Dots), its
// hooks made an order (chart.Order).
func (k *Kind) Children(ctx context.Context, in render.Input, cl chart.Cluster) (*Rendered, error) {
	if k.Chart == nil {
		res, err := k.Templates.Children(ctx, in)
		if err != nil {
			return nil, err
		}
		return &Rendered{Result: res, DependsOn: k.Spec.DependsOn}, nil
	}
	// The chart's work for the object is the render's: it spends of the
	// render's budget, and the templates have the rest.
	set, dots, spent, err := k.Chart.Dots(ctx, in.Object, cl, in.Budget)
	if err != nil {
		return nil, err
	}
	in.Dots, in.Spent = dots, spent
	res, err := set.Children(ctx, in)
	if err != nil {
		return nil, err
	}
	o := chart.Order(res.Manifests)
	res.Manifests = o.Manifests
	return &Rendered{Result: res, DependsOn: o.DependsOn, DeleteHooks: o.DeleteHooks, PostDeleteHooks: o.PostDeleteHooks}, nil
}

// Status renders the status of in.Object over its children: status.yaml,
// and for a chart the chart's name and version (status.chart).
func (k *Kind) Status(ctx context.Context, in render.Input) (*render.Result, error) {
	res, err := k.Templates.Status(ctx, in)
	if err != nil || k.Chart == nil {
		return res, err
	}
	status := maps.Clone(res.Status)
	if status == nil {
		status = map[string]any{}
	}
	status["chart"] = map[string]any{"name": k.Chart.Name(), "version": k.Chart.Version()}
	// The hooks that ran and were deleted (hook-succeeded) stay recorded
	// from one status write to the next (engine/reconcile adds to them).
	if st, ok := in.Object["status"].(map[string]any); ok {
		if hooks, ok := st["hooks"].(map[string]any); ok && len(hooks) > 0 {
			status["hooks"] = maps.Clone(hooks)
		}
	}
	res.Status = status
	return res, nil
}

// Kept reports whether a child of the kind is one that nothing of the
// engine deletes: neither a prune, nor the parent's deletion, nor the
// garbage collector through an owner reference. For a chart that is
// Helm's helm.sh/resource-policy: keep (chart.Keep), which helm uninstall
// and helm upgrade honour; a folder of templates has no such policy (its
// children opt out of pruning alone, with operator.tmplop.io/prune:
// disabled). Asked of the rendered child (whether it gets an owner
// reference) and of the live one (whether it may be deleted).
func (k *Kind) Kept(child metav1.Object) bool {
	return k.Chart != nil && chart.Keep(child.GetAnnotations())
}
