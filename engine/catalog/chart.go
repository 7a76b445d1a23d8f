package catalog

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	"helm.sh/helm/v3/pkg/chart/loader"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tmplop/operator/engine/catalog/layout"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/render"
)

// loadChart loads the folder's Helm chart, if it is one: a Chart.yaml
// beside kind.yaml, or a packaged chart (a ConfigMap's `*.tgz` key). It
// returns nil for a folder of templates.
func loadChart(files layout.Files, spec *Spec) (*chart.Chart, error) {
	files, err := chartFiles(files)
	if err != nil || files == nil {
		return nil, err
	}
	if len(spec.DependsOn) > 0 {
		return nil, fmt.Errorf("%s: dependsOn: a chart orders its children with Helm's hooks (docs/helm.md), not dependsOn", KindFile)
	}
	if _, ok := files[layout.StatusFile]; ok {
		return nil, fmt.Errorf("%s: a chart's status is the engine's conditions and the chart's name and version; remove %s", layout.StatusFile, layout.StatusFile)
	}
	return chart.Load(files, []string{KindFile, CRDFile}, spec.OverrideValues)
}

// chartFiles are the files of the folder's chart: the folder's own when
// it holds Chart.yaml, the archive's when it holds one `*.tgz`, nil when
// it is no chart.
func chartFiles(files layout.Files) (layout.Files, error) {
	if _, ok := files[layout.ChartFile]; ok {
		return files, nil
	}
	var archives []string
	for _, name := range files.Names() {
		if layout.RoleOf(name) == layout.ChartArchive {
			archives = append(archives, name)
		}
	}
	switch len(archives) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("%v: a kind folder holds one packaged chart", archives)
	}
	buffered, err := loader.LoadArchiveFiles(bytes.NewReader(files[archives[0]]))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", archives[0], err)
	}
	out := layout.Files{}
	for _, f := range buffered {
		out[f.Name] = f.Data
	}
	for _, own := range []string{KindFile, CRDFile} {
		if data, ok := files[own]; ok {
			out[own] = data
		}
	}
	return out, nil
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
	set, dots, err := k.Chart.Dots(in.Object, cl)
	if err != nil {
		return nil, err
	}
	in.Dots = dots
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
