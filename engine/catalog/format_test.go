package catalog

import (
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
)

// hookFile renders one child of each kind of lifecycle a chart knows: a
// plain child, a kept one, a pre-install hook (before-hook-creation by
// default), a hook-succeeded hook, and the two deletion hooks.
const hookFile = `apiVersion: v1
kind: ConfigMap
metadata:
  name: plain
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
  annotations: {"helm.sh/resource-policy": keep}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {"helm.sh/hook": pre-install}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: once
  annotations: {"helm.sh/hook": post-install, "helm.sh/hook-delete-policy": hook-succeeded}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: before
  annotations: {"helm.sh/hook": pre-delete}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: after
  annotations: {"helm.sh/hook": post-delete}
`

// formatKinds are a kind of each format, rendering hookFile: a folder of
// templates and a Helm chart that adopts Helm releases.
func formatKinds(t *testing.T) map[string]*Kind {
	t.Helper()
	compile := func(files layout.Files) *Kind {
		k, err := Compile("web", "test", files)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	return map[string]*Kind{
		"templates": compile(layout.Files{KindFile: []byte(chartKindYAML), "children.yaml": []byte(hookFile)}),
		"chart": compile(layout.Files{KindFile: []byte(chartKindYAML + "adoptHelmReleases: true\n"),
			"Chart.yaml": []byte("apiVersion: v2\nname: web\nversion: 1.2.3\n"), "templates/children.yaml": []byte(hookFile)}),
	}
}

// formatAnswers is what a format answers for hookFile's children, by the
// child's name.
type formatAnswers struct {
	file         string // FileOf the child template
	rendersAlone bool
	readsCluster bool
	adopts       bool
	children     []string // applied with the object, in order of the render
	onDelete     map[string][]string
	steps        []string // DeleteSteps, "!" after a Last one
	kept         []string
	recreated    []string
	recorded     []string // Record keeps a record of them once Current
	statusFields []string // StatusSchema and what Status adds
}

// TestFormats asks each format every question the pipeline asks a kind
// (format.go), over the same children: a folder of templates answers
// with the zero behaviour, a chart with Helm's lifecycle. A new format
// adds its row.
func TestFormats(t *testing.T) {
	want := map[string]formatAnswers{
		"templates": {file: "children.yaml", rendersAlone: true,
			children: []string{"plain", "kept", "migrate", "once", "before", "after"}},
		"chart": {file: "templates/children.yaml", readsCluster: true, adopts: true,
			children: []string{"plain", "kept", "migrate", "once"},
			onDelete: map[string][]string{preDelete: {"before"}, postDelete: {"after"}},
			steps:    []string{preDelete, postDelete + "!"},
			kept:     []string{"kept"}, recreated: []string{"migrate"}, recorded: []string{"once"},
			statusFields: []string{"chart", "hooks"}},
	}
	for name, k := range formatKinds(t) {
		t.Run(name, func(t *testing.T) {
			w := want[name]
			if k.FormatName() != name {
				t.Errorf("FormatName() = %q", k.FormatName())
			}
			res, err := k.Children(t.Context(), render.Input{Object: webObject(nil)}, Cluster{})
			if err != nil {
				t.Fatal(err)
			}
			var got formatAnswers
			got.file = k.FileOf(k.Templates.ChildTemplates()[0])
			got.rendersAlone, got.readsCluster = k.TemplatesRenderAlone(), k.ReadsCluster()
			got.adopts = k.Claimant("op") != ownership.Claimant{Manager: "op"}
			var all []*unstructured.Unstructured
			for _, m := range res.Manifests {
				got.children = append(got.children, m.Object.GetName())
				all = append(all, m.Object)
			}
			for _, step := range k.DeleteSteps() {
				name := step.Name
				if step.Last {
					name += "!"
				}
				got.steps = append(got.steps, name)
			}
			for step, ms := range res.OnDelete {
				if !slices.ContainsFunc(k.DeleteSteps(), func(s DeleteStep) bool { return s.Name == step }) {
					t.Errorf("OnDelete[%q]: no delete step of that name: its children would never be applied", step)
				}
				if got.onDelete == nil {
					got.onDelete = map[string][]string{}
				}
				for _, m := range ms {
					got.onDelete[step] = append(got.onDelete[step], m.Object.GetName())
				}
			}
			for _, c := range all {
				if k.Kept(c) {
					got.kept = append(got.kept, c.GetName())
				}
				if why, ok := k.Recreate(c); ok {
					got.recreated = append(got.recreated, c.GetName())
					if why == "" {
						t.Errorf("Recreate(%s) gives no reason", c.GetName())
					}
				}
				hashed, ann := c.DeepCopy(), c.GetAnnotations() // as adopted (ownership.Adopt)
				if ann == nil {
					ann = map[string]string{}
				}
				ann[ownership.AnnotationHash] = "h1"
				hashed.SetAnnotations(ann)
				if k.Record(map[string]any{}, webObject(nil), []*unstructured.Unstructured{hashed}) {
					got.recorded = append(got.recorded, c.GetName())
				}
			}
			sres, err := k.Status(t.Context(), render.Input{Object: webObject(nil)})
			if err != nil {
				t.Fatal(err)
			}
			schema := k.StatusSchema()
			got.statusFields = slices.Sorted(maps.Keys(schema))
			for field := range sres.Status {
				if _, ok := schema[field]; !ok {
					t.Errorf("Status writes status.%s, which StatusSchema does not declare", field)
				}
			}
			if k.HasStatus() != (len(schema) > 0) {
				t.Errorf("HasStatus() = %v without a status.yaml, with status fields %v", k.HasStatus(), got.statusFields)
			}
			if !equalAnswers(got, w) {
				t.Errorf("answers:\n got  %+v\n want %+v", got, w)
			}
		})
	}
}

func equalAnswers(a, b formatAnswers) bool {
	return a.file == b.file && a.rendersAlone == b.rendersAlone && a.readsCluster == b.readsCluster && a.adopts == b.adopts &&
		slices.Equal(a.children, b.children) && slices.Equal(a.steps, b.steps) && slices.Equal(a.kept, b.kept) &&
		slices.Equal(a.recreated, b.recreated) && slices.Equal(a.recorded, b.recorded) && slices.Equal(a.statusFields, b.statusFields) &&
		maps.EqualFunc(a.onDelete, b.onDelete, slices.Equal)
}
