package catalog

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/catalog/childkinds"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
)

// templates is the format of a folder of templates: its child templates
// over the object, in kind.yaml's dependsOn order, and nothing else. It is
// the zero behaviour of a Format: no hooks, nothing recreated, nothing
// kept, no records, no delete steps, no status fields of its own.
type templates struct {
	set       *render.Set
	dependsOn map[string][]string
}

var _ Format = templates{}

// loadTemplates parses a folder of templates, refusing kind.yaml's fields
// that only a chart has.
func loadTemplates(files layout.Files, spec *Spec) (Format, *render.Set, error) {
	set, err := render.Parse(files.Templates())
	switch {
	case err != nil:
		return nil, nil, err
	case len(spec.OverrideValues) > 0:
		return nil, nil, fmt.Errorf("%s: overrideValues: only a Helm chart has values (the folder has no %s)", KindFile, layout.ChartFile)
	case spec.AdoptHelmReleases:
		return nil, nil, fmt.Errorf("%s: adoptHelmReleases: only a Helm chart has releases to take over (the folder has no %s)", KindFile, layout.ChartFile)
	}
	return templates{set: set, dependsOn: spec.DependsOn}, set, nil
}

func (templates) Name() string { return "templates" }

func (f templates) Children(ctx context.Context, in render.Input, _ Cluster) (*Rendered, error) {
	res, err := f.set.Children(ctx, in)
	if err != nil {
		return nil, err
	}
	return &Rendered{Result: res, DependsOn: f.dependsOn}, nil
}

func (templates) Status(rendered, _ map[string]any) map[string]any { return rendered }

func (templates) StatusSchema() map[string]apiextensionsv1.JSONSchemaProps { return nil }

func (templates) Kept(metav1.Object) bool { return false }

func (templates) Recreate(metav1.Object) (string, bool) { return "", false }

func (templates) Done(map[string]any, *unstructured.Unstructured) bool { return false }

func (templates) Record(_, _ map[string]any, _ []*unstructured.Unstructured) bool { return false }

func (templates) DeleteSteps() []DeleteStep { return nil }

// Claimant: a folder of templates never takes over what Helm made: such
// an object is part of a release that Helm still lists (docs/helm.md).
func (templates) Claimant(manager string) ownership.Claimant {
	return ownership.Claimant{Manager: manager}
}

func (templates) ReadsCluster() bool { return false }

func (templates) NeverApplied() childkinds.NeverApplied { return nil }

func (templates) FileOf(template string) string { return template }

func (templates) TemplatesRenderAlone() bool { return true }
