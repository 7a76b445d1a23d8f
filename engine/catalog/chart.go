package catalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tmplop/operator/engine/catalog/childkinds"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
)

// chartFormat is the format of a Helm chart (engine/chart): its templates
// render as Helm would render them for the object, its hooks become an
// apply order, recreations, records and delete steps, and
// helm.sh/resource-policy: keep keeps a child (docs/helm.md). Its records
// are in chart_records.go.
type chartFormat struct {
	ch *chart.Chart
	// adoptReleases is kind.yaml's adoptHelmReleases.
	adoptReleases bool
}

var _ Format = chartFormat{}

// loadChart loads the folder's Helm chart, if it is one: a Chart.yaml
// beside kind.yaml, or a packaged chart (a ConfigMap's `*.tgz` key),
// unpacked within lim. It returns a nil Format for a folder of templates.
func loadChart(files layout.Files, spec *Spec, lim Limits) (Format, *render.Set, error) {
	archive, isChart, err := chartArchive(files)
	if err != nil || !isChart {
		return nil, nil, err
	}
	if len(spec.DependsOn) > 0 {
		return nil, nil, fieldErr(errors.New("dependsOn: a chart orders its children with Helm's hooks (docs/helm.md), not dependsOn"), "dependsOn")
	}
	noStatus := render.At(layout.StatusFile, 0, render.CodeFolder,
		fmt.Errorf("a chart's status is the engine's conditions and the chart's name and version; remove %s", layout.StatusFile))
	if _, ok := files[layout.StatusFile]; ok {
		return nil, nil, noStatus
	}
	ch, err := chart.Load(files, chart.Options{Archive: archive, Skip: []string{KindFile, CRDFile}, Override: spec.OverrideValues, MaxUnpacked: lim.MaxUnpacked})
	if err != nil {
		return nil, nil, err
	}
	if ch.HasFile(layout.StatusFile) {
		return nil, nil, noStatus // in the packaged chart
	}
	if spec.builtIn() {
		// A chart's object keeps the records of its hooks in its status,
		// where its author cannot forge them (the hooks that succeeded,
		// the deletion hooks that ran): a built-in kind's status is
		// Kubernetes'. Nor has a built-in kind a spec to be the values.
		return nil, nil, fieldErr(fmt.Errorf("a chart kind keeps the records of its hooks in its objects' status, and the status of built-in kind %s is not the operator's to write: serve the chart as a custom kind",
			spec.Kind), "kind")
	}
	return chartFormat{ch: ch, adoptReleases: spec.AdoptHelmReleases}, ch.Set, nil
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

func (chartFormat) Name() string { return "chart" }

// Children renders the chart's templates as Helm would for in.Object on
// cluster cl (chart.Dots), its hooks made an order (chart.Order): the
// pre-delete and post-delete hooks are the children of its delete steps.
func (f chartFormat) Children(ctx context.Context, in render.Input, cl Cluster) (*Rendered, error) {
	// The chart's work for the object is the render's: it spends of the
	// render's budget, and the templates have the rest.
	set, dots, spent, err := f.ch.Dots(ctx, in.Object, cl, in.Budget)
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
	out := &Rendered{Result: res, DependsOn: o.DependsOn}
	if len(o.DeleteHooks) > 0 || len(o.PostDeleteHooks) > 0 {
		out.OnDelete = map[string][]render.Manifest{preDelete: o.DeleteHooks, postDelete: o.PostDeleteHooks}
	}
	return out, nil
}

// Status adds the chart's name and version (status.chart), and keeps the
// records of status.hooks from one status write to the next (Record adds
// to them).
func (f chartFormat) Status(rendered, obj map[string]any) map[string]any {
	status := maps.Clone(rendered)
	if status == nil {
		status = map[string]any{}
	}
	status["chart"] = map[string]any{"name": f.ch.Name(), "version": f.ch.Version()}
	if st, ok := obj["status"].(map[string]any); ok {
		if hooks, ok := st[statusHooks].(map[string]any); ok && len(hooks) > 0 {
			status[statusHooks] = maps.Clone(hooks)
		}
	}
	return status
}

// StatusSchema: besides the conditions, the chart's name and version, the
// hook-succeeded hooks that ran, by Kind/name, with the hash of what ran,
// and on an object being deleted its deletion hooks that ran.
func (chartFormat) StatusSchema() map[string]apiextensionsv1.JSONSchemaProps {
	return map[string]apiextensionsv1.JSONSchemaProps{
		"chart": {Type: "object", Description: "The Helm chart that renders the object's children.", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"name":    {Type: "string"},
			"version": {Type: "string"},
		}},
		statusHooks: {Type: "object", Description: "Hooks with hook-delete-policy hook-succeeded that ran and were deleted: Kind/name -> hash of what ran; " +
			"on an object being deleted, its deletion hooks that ran: pre-delete, post-delete -> the deletion's timestamp.",
			AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
	}
}

// Kept is Helm's helm.sh/resource-policy: keep (chart.Keep), which helm
// uninstall and helm upgrade honour.
func (chartFormat) Kept(child metav1.Object) bool { return chart.Keep(child.GetAnnotations()) }

// Recreate: a hook with hook-delete-policy before-hook-creation (Helm's
// default) is deleted and created anew when its content changes, as Helm
// deletes and creates a hook again: a Job of one name for every version
// runs again, where a patch would be refused.
func (chartFormat) Recreate(child metav1.Object) (string, bool) {
	if !chart.RecreateOnChange(child.GetAnnotations()) {
		return "", false
	}
	return "hook-delete-policy " + chart.PolicyBeforeHookCreation, true
}

// Claimant: a chart kind with adoptHelmReleases accepts the consent of a
// Helm release's owner to take its objects over (docs/helm.md).
func (f chartFormat) Claimant(manager string) ownership.Claimant {
	return ownership.Claimant{Manager: manager, AdoptHelmReleases: f.adoptReleases}
}

// ReadsCluster: a chart's templates read .Capabilities.
func (chartFormat) ReadsCluster() bool { return true }

// NeverApplied: a chart's test and rollback hooks (chart.NeverApplied).
func (chartFormat) NeverApplied() childkinds.NeverApplied { return chart.NeverApplied }

// FileOf: a chart's templates are named from the chart's name
// (web/templates/x.yaml); the file is the folder's templates/x.yaml.
func (f chartFormat) FileOf(template string) string {
	return strings.TrimPrefix(template, f.ch.Name()+"/")
}

// TemplatesRenderAlone: a chart's templates render only with their
// chart's scopes.
func (chartFormat) TemplatesRenderAlone() bool { return false }
