package catalog

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/catalog/childkinds"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
)

// Format is what a kind folder's format adds to the pipeline: how its
// templates render an object's children and in which order, what it adds
// to the object's status and to its CRD's status schema, which children
// outlive their parent or are created anew rather than patched, what the
// object's deletion runs first, and which objects it may take over. A
// folder of templates (templates.go) is the zero behaviour; a Helm chart
// (chart.go) is Helm's lifecycle.
//
// Compile picks a folder's format by its files (loadFormat), once; every
// consumer asks the Kind, whose methods delegate here, and none of them
// knows which format a kind has. A new format is one more implementation
// and one more case in loadFormat (docs/architecture.md, "Add a folder
// format").
type Format interface {
	// Name names the format in messages: "templates", "chart".
	Name() string
	// Children renders the children of in.Object and the order they are
	// applied in; cl is what the templates see of the cluster, for a
	// format that reads it (ReadsCluster).
	Children(ctx context.Context, in render.Input, cl Cluster) (*Rendered, error)
	// Status returns the status rendered for obj (status.yaml's output,
	// possibly nil) with the format's own fields, the ones StatusSchema
	// declares. It must not change rendered.
	Status(rendered, obj map[string]any) map[string]any
	// StatusSchema declares the fields of the status that Status and
	// Record write, for the kind's generated CRD; nil when there are none.
	StatusSchema() map[string]apiextensionsv1.JSONSchemaProps
	// Kept reports whether a child must outlive its parent: no owner
	// reference, never pruned, never deleted with the parent. Asked of the
	// rendered child and of the live one.
	Kept(child metav1.Object) bool
	// Recreate reports whether a child whose rendered content changed is
	// deleted and created anew instead of patched, and why (for the
	// object's conditions).
	Recreate(child metav1.Object) (why string, ok bool)
	// Done reports whether obj's status records child as done with this
	// content (Record): it is left out of the plan, so the prune deletes
	// it, until its content changes.
	Done(obj map[string]any, child *unstructured.Unstructured) bool
	// Record adds to status, the status about to be written for obj, the
	// records of the planned children that are Current now, and reports
	// whether any of them was not recorded in obj's status yet. status may
	// be nil: then it only reports.
	Record(status, obj map[string]any, current []*unstructured.Unstructured) (added bool)
	// DeleteSteps are what the deletion of an object runs besides deleting
	// its children, in order; nil when nothing.
	DeleteSteps() []DeleteStep
	// Claimant is who applies the kind's children for the field manager,
	// and which objects made by others it may take over.
	Claimant(manager string) ownership.Claimant
	// ReadsCluster reports whether the templates read the cluster's version
	// and API versions (a chart's .Capabilities): the controller then reads
	// them from discovery when the kind starts.
	ReadsCluster() bool
	// NeverApplied tells the manifests the format never applies by their
	// annotations, for the static analysis of child kinds; nil: none.
	NeverApplied() childkinds.NeverApplied
	// FileOf is the folder's file that a template name stands for.
	FileOf(template string) string
	// TemplatesRenderAlone reports whether one child template can render
	// on its own with the folder's helpers (lint renders a failing folder
	// file by file).
	TemplatesRenderAlone() bool
}

// Cluster is what a kind's templates see of the cluster they render for:
// its version and API versions (a chart's .Capabilities). The zero value
// is Helm's defaults, as offline.
type Cluster = chart.Cluster

// Rendered is one render of a kind's children, with the order they are
// applied in: a template (a group of children) waits for the children of
// those DependsOn names to be Current. A folder's order is its kind.yaml
// dependsOn; a chart's comes from its hooks.
type Rendered struct {
	*render.Result
	DependsOn map[string][]string
	// OnDelete are the children of the kind's delete steps, by step name
	// (DeleteStep.Name): applied only when the object is deleted, never
	// with the others.
	OnDelete map[string][]render.Manifest
}

// DeleteStep is a step of an object's deletion that applies children and
// waits until each is Current before the deletion goes on: a chart's
// pre-delete hooks, before any child is deleted, and its post-delete
// hooks, once every other child is gone. Its children are rendered with
// the others (Rendered.OnDelete); the parent holds the finalizer while its
// render has any. That the step ran is recorded in the object's status,
// for the deletion under way only: a hook deleted with the children is not
// taken for one not run, and a restart neither runs it again nor skips it.
type DeleteStep struct {
	// Name names the step in Rendered.OnDelete, Events and logs:
	// "pre-delete".
	Name string
	// Last: the step runs once every other child is gone; else before any
	// child goes.
	Last bool
	// Holds reports whether a live child is one of the step's: the
	// deletion of the other children spares it until the step ran.
	// Required of a Last step; nil for one that runs before the children
	// go, whose children are deleted with the others.
	Holds func(child metav1.Object) bool
	// Ran reports whether obj's status records that the step ran for the
	// deletion under way.
	Ran func(obj map[string]any) bool
	// Record adds to status, obj's status about to be written, the record
	// that the step ran for this deletion.
	Record func(status, obj map[string]any)
}

// loadFormat picks the folder's format by its files and loads it: a Helm
// chart when the folder holds Chart.yaml or a packaged chart, else a
// folder of templates. set is the parsed templates (Kind.Templates).
func (l Limits) loadFormat(files layout.Files, spec *Spec) (f Format, set *render.Set, err error) {
	if f, set, err := loadChart(files, spec, l); err != nil || f != nil {
		return f, set, err
	}
	return loadTemplates(files, spec)
}

// formatOf is the kind's format: a Kind made without Compile (a test's)
// is a folder of its Templates, the zero behaviour.
func (k *Kind) formatOf() Format {
	if k.format == nil {
		return templates{set: k.Templates, dependsOn: k.Spec.DependsOn}
	}
	return k.format
}

// FormatName names the kind's format: "templates", "chart".
func (k *Kind) FormatName() string { return k.formatOf().Name() }

// Children renders the children of in.Object, as the kind's format does
// (a chart: as Helm would for that object on cluster cl), with the order
// they apply in and the children of the delete steps apart.
func (k *Kind) Children(ctx context.Context, in render.Input, cl Cluster) (*Rendered, error) {
	return k.formatOf().Children(ctx, in, cl)
}

// Status renders the status of in.Object over its children: status.yaml,
// and what the kind's format adds (a chart: status.chart, and the records
// of status.hooks carried over).
func (k *Kind) Status(ctx context.Context, in render.Input) (*render.Result, error) {
	res, err := k.Templates.Status(ctx, in)
	if err != nil {
		return res, err
	}
	res.Status = k.formatOf().Status(res.Status, in.Object)
	return res, nil
}

// HasStatus reports whether the kind renders a status of its own:
// status.yaml, or the fields its format writes.
func (k *Kind) HasStatus() bool { return k.Templates.HasStatus() || len(k.StatusSchema()) > 0 }

// StatusSchema declares the fields of the status the kind's format writes
// besides status.yaml's and the engine's conditions (engine/crd puts them
// in the generated CRD).
func (k *Kind) StatusSchema() map[string]apiextensionsv1.JSONSchemaProps {
	return k.formatOf().StatusSchema()
}

// Kept reports whether a child of the kind is one that nothing of the
// engine deletes: neither a prune, nor the parent's deletion, nor the
// garbage collector through an owner reference (a chart's
// helm.sh/resource-policy: keep; a folder of templates has no such policy,
// its children opt out of pruning alone, with operator.tmplop.io/prune:
// disabled). Asked of the rendered child (whether it gets an owner
// reference) and of the live one (whether it may be deleted).
func (k *Kind) Kept(child metav1.Object) bool { return k.formatOf().Kept(child) }

// Recreate reports whether a child whose rendered content changed is
// deleted and created anew, not patched, and why (a chart's hook with
// hook-delete-policy before-hook-creation).
func (k *Kind) Recreate(child metav1.Object) (why string, ok bool) {
	return k.formatOf().Recreate(child)
}

// Done reports whether obj's status records child as done with its
// content: the plan leaves it out (and the prune deletes it) until the
// content changes (a chart's hook-succeeded hook that ran).
func (k *Kind) Done(obj map[string]any, child *unstructured.Unstructured) bool {
	return k.formatOf().Done(obj, child)
}

// Record adds to status, about to be written for obj, the records of the
// planned children that are Current now (Done reads them), and reports
// whether any was not recorded in obj's status yet.
func (k *Kind) Record(status, obj map[string]any, current []*unstructured.Unstructured) (added bool) {
	return k.formatOf().Record(status, obj, current)
}

// DeleteSteps are what the deletion of an object of the kind runs besides
// deleting its children, in order (a chart's pre-delete and post-delete
// hooks).
func (k *Kind) DeleteSteps() []DeleteStep { return k.formatOf().DeleteSteps() }

// Claimant is who applies the kind's children as the field manager
// manager: which objects made by others it may take over (a chart kind
// with adoptHelmReleases: a Helm release's, with its owner's consent).
func (k *Kind) Claimant(manager string) ownership.Claimant { return k.formatOf().Claimant(manager) }

// ReadsCluster reports whether the kind's templates read the cluster's
// version and API versions: the controller reads discovery for them when
// the kind starts, and renders without otherwise.
func (k *Kind) ReadsCluster() bool { return k.formatOf().ReadsCluster() }

// NeverApplied is what tells a manifest the folder never applies by its
// annotations: a chart's test and rollback hooks. Nil for a folder of
// templates, which applies what it renders.
func (k *Kind) NeverApplied() childkinds.NeverApplied { return k.formatOf().NeverApplied() }

// FileOf is the folder's file that the template name stands for: a
// chart's templates are named as Helm names them, from the chart's name
// (web/templates/x.yaml).
func (k *Kind) FileOf(template string) string { return k.formatOf().FileOf(template) }

// TemplatesRenderAlone reports whether each child template can render on
// its own, with the folder's helpers: a folder's can; a chart's render
// only with their chart's scopes.
func (k *Kind) TemplatesRenderAlone() bool { return k.formatOf().TemplatesRenderAlone() }
