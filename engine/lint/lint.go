package lint

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/render"
)

// Options says what to lint.
type Options struct {
	// Templates is a directory of kind folders, or one kind folder.
	Templates string
	// Examples are directories or files of sample objects; each is
	// rendered by the folder whose kind.yaml names its apiVersion and kind.
	Examples []string
	// CRDs finds the kinds' CRDs, and the scope of custom child kinds
	// when it is a Scoper; nil: no CRD checks.
	CRDs CRDSource
	// Now is the renders' clock; zero: time.Now().
	Now time.Time
}

// placeholderUID is the UID of the objects lint renders, as `operator
// render` gives one to an object read from a file.
const placeholderUID = "00000000-0000-0000-0000-000000000000"

// emptyName names the object with an empty spec.
const emptyName = "example"

// Run lints the folders of o.Templates and returns the findings, sorted.
// The error is for a templates directory that cannot be read.
func Run(ctx context.Context, o Options) ([]Finding, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	dirs, err := catalog.FoldersOf(o.Templates)
	if err != nil {
		return nil, err
	}
	var out []Finding
	single := len(dirs) == 1 && dirs[0] == o.Templates
	if len(dirs) == 0 {
		out = append(out, Finding{File: path(o.Templates), Severity: severityOf[CodeNoFolders], Code: CodeNoFolders,
			Message: fmt.Sprintf("no kind folder (a folder with a %s) in %s", catalog.KindFile, o.Templates)})
	}
	var folders []*folder
	served := map[schema.GroupKind]string{}
	broken := map[string]bool{} // apiVersion + " " + kind of folders that do not load
	for _, d := range dirs {
		f, fs := loadFolder(d)
		out = append(out, fs...)
		if f.kind == nil {
			av, k := servedKind(f.kindYAML)
			broken[av+" "+k] = true
			continue
		}
		gk := f.kind.GVK.GroupKind()
		if other, dup := served[gk]; dup {
			out = append(out, f.at(catalog.KindFile, keyLine(f.kindYAML, "kind"), CodeDuplicateKind,
				"%s is already served by %s: the operator skips this folder", gk, path(other)))
			continue
		}
		served[gk] = d
		folders = append(folders, f)
	}

	namespaced := func(gvk schema.GroupVersionKind) bool {
		if sc, ok := o.CRDs.(Scoper); ok {
			if ns, known := sc.Namespaced(gvk.GroupKind()); known {
				return ns
			}
		}
		for _, f := range folders {
			if f.kind.GVK.GroupKind() == gvk.GroupKind() && f.kind.Spec.Scope != "" {
				return f.kind.Spec.Scope != "Cluster"
			}
		}
		ns, _ := kube.OfflineNamespaced(gvk)
		return ns
	}

	samples, fs := readSamples(o.Examples)
	out = append(out, fs...)
	bySample := map[*folder][]sample{}
	for _, s := range samples {
		f, why := match(folders, s.obj)
		if f == nil && broken[s.obj.GetAPIVersion()+" "+s.obj.GetKind()] {
			continue // its folder's errors say enough
		}
		if f == nil && single && !sameGroupKind(folders, s.obj) {
			continue // the other folders' samples, when one folder is linted
		}
		if f == nil {
			out = append(out, Finding{File: s.file, Line: s.line, Severity: severityOf[CodeStraySample], Code: CodeStraySample, Message: why})
			continue
		}
		bySample[f] = append(bySample[f], s)
	}

	for _, f := range folders {
		out = append(out, f.lint(ctx, bySample[f], o, namespaced)...)
	}
	return Sort(out), nil
}

// sameGroupKind reports whether a folder serves obj's group and kind.
func sameGroupKind(folders []*folder, obj *unstructured.Unstructured) bool {
	for _, f := range folders {
		if f.kind.GVK.GroupKind() == obj.GroupVersionKind().GroupKind() {
			return true
		}
	}
	return false
}

// match finds the folder that serves obj, or says why none does.
func match(folders []*folder, obj *unstructured.Unstructured) (*folder, string) {
	gvk := obj.GroupVersionKind()
	for _, f := range folders {
		k := f.kind
		if k.GVK.GroupKind() != gvk.GroupKind() {
			continue
		}
		if k.Spec.APIVersion != obj.GetAPIVersion() && (k.Converter() == nil || !f.servedVersion(gvk.Version)) {
			return nil, fmt.Sprintf("%s %q is %s, but %s watches %s: not rendered", obj.GetKind(), obj.GetName(), obj.GetAPIVersion(), path(f.dir), k.Spec.APIVersion)
		}
		if sel := k.ObjectSelector(); sel != "" {
			if s, err := labels.Parse(sel); err == nil && !s.Matches(labels.Set(obj.GetLabels())) {
				return nil, fmt.Sprintf("%s %q does not match the selector of %s (%s): the operator does not serve it", obj.GetKind(), obj.GetName(), path(f.dir), sel)
			}
		}
		return f, ""
	}
	return nil, fmt.Sprintf("no kind folder serves %s %s: not rendered", obj.GetAPIVersion(), obj.GetKind())
}

// lint runs every check of one loaded folder.
func (f *folder) lint(ctx context.Context, samples []sample, o Options, namespaced func(schema.GroupVersionKind) bool) []Finding {
	k := f.kind
	out := f.staticChecks(namespaced)

	out = append(out, f.reservedGroup()...)
	var crd *CRD
	if !k.BuiltIn() {
		var err error
		if o.CRDs != nil {
			crd, err = o.CRDs.CRD(k)
		}
		switch {
		case err != nil:
			// engine/crd's mistakes are *render.Error about kind.yaml or
			// crd.yaml; any other is the CRD's (a CRDs source's).
			file, line, msg := catalog.KindFile, 0, err.Error()
			if re, ok := errors.AsType[*render.Error](err); ok && re.Template != "" {
				file, line, msg = re.Template, re.Line, re.Message
			}
			out = append(out, f.at(file, line, CodeInput, "the CRD of %s: %s", k.GVK.GroupKind(), msg))
		case crd == nil:
			out = append(out, f.noCRD(k))
		default:
			out = append(out, f.checkCRD(crd)...)
			out = append(out, f.compatibility(crd)...)
		}
	}
	parentNamespaced := namespaced(k.GVK)
	if crd != nil {
		parentNamespaced = crd.Object.Spec.Scope != "Cluster"
	}

	if len(samples) == 0 {
		out = append(out, f.at(catalog.KindFile, 0, CodeNoSample,
			"no sample %s %s in the examples: the folder is rendered only against an empty spec", k.Spec.APIVersion, k.Spec.Kind))
	}
	empty := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": k.Spec.APIVersion, "kind": k.Spec.Kind,
		"metadata": map[string]any{"name": emptyName},
		"spec":     map[string]any{},
	}}
	if sel := k.Spec.Selector; sel != nil && len(sel.MatchLabels) > 0 {
		empty.SetLabels(sel.MatchLabels)
	}
	r := renderer{f: f, crd: crd, namespaced: namespaced, now: o.Now}
	out = append(out, r.render(ctx, f.parent(empty, parentNamespaced), "rendered against an empty spec", true)...)
	out = append(out, f.roundTrips(ctx, f.parent(empty.DeepCopy(), parentNamespaced).Object, "rendered against an empty spec", true)...)
	for _, s := range samples {
		what := fmt.Sprintf("sample %s", s.where())
		obj := f.parent(s.obj.DeepCopy(), parentNamespaced)
		if obj.GetAPIVersion() != k.Spec.APIVersion {
			// Written at another version: the operator reads it at the
			// hub, converted by the folder's templates.
			hub, fs := f.toHub(ctx, sample{file: s.file, line: s.line, obj: obj})
			out = append(out, fs...)
			if hub == nil {
				continue
			}
			obj = hub
		}
		out = append(out, r.render(ctx, obj, what, false)...)
		out = append(out, f.roundTrips(ctx, obj.Object, what, false)...)
	}
	return once(out)
}

// once keeps the first of the findings that every render of a folder
// repeats with only the object's name changed (a refused lookup, a child
// outside the namespace, a budget), and drops a refused lookup that the
// static LNT400 already reports at the same place.
func once(fs []Finding) []Finding {
	undeclared := map[string]bool{}
	for _, f := range fs {
		if f.Code == CodeUndeclaredLookup {
			undeclared[f.Where()] = true
		}
	}
	seen := map[string]bool{}
	out := fs[:0]
	for _, f := range fs {
		switch f.Code {
		case CodeLookupRefused, CodeOutside, CodeBudget:
			if f.Code == CodeLookupRefused && undeclared[f.Where()] {
				continue
			}
			first, _, _ := strings.Cut(f.Message, " ")
			key := f.Code + " " + f.Where() + " " + first
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		out = append(out, f)
	}
	return out
}

// parent completes obj as the API server would have it: a namespace, a
// UID, a generation.
func (f *folder) parent(obj *unstructured.Unstructured, namespaced bool) *unstructured.Unstructured {
	if namespaced && obj.GetNamespace() == "" {
		obj.SetNamespace(metav1.NamespaceDefault)
	}
	if obj.GetUID() == "" {
		obj.SetUID(placeholderUID)
	}
	if obj.GetGeneration() == 0 {
		obj.SetGeneration(1)
	}
	return obj
}

// renderer renders one folder against objects and checks the results.
type renderer struct {
	f          *folder
	crd        *CRD
	namespaced func(schema.GroupVersionKind) bool
	now        time.Time
	// randomChecked is set once the folder's non-deterministic children
	// have been looked for.
	randomChecked bool
}

// render renders obj's children and status and checks them. what says
// what obj is, for messages; empty is true for the empty spec.
func (r *renderer) render(ctx context.Context, obj *unstructured.Unstructured, what string, empty bool) []Finding {
	f, k := r.f, r.f.kind
	var out []Finding
	in := render.Input{Object: obj.Object, Lookup: newLookup(k, r.namespaced, obj.GetNamespace()), Now: r.now,
		Budget: k.RenderBudget(render.Budget{})}
	cr := f.renderChildren(ctx, in)
	for _, e := range cr.failures {
		out = append(out, f.failure(e, what, empty))
	}
	for _, m := range cr.manifests {
		out = append(out, f.childFields(m)...)
	}
	adopted, fs := f.adopt(obj, cr.manifests, r.namespaced, what, !empty)
	out = append(out, fs...)
	if cr.res != nil && len(cr.res.Nondeterministic) > 0 && !r.randomChecked {
		r.randomChecked = true
		out = append(out, r.nondeterministic(ctx, in, cr.res)...)
	}

	if !k.Templates.HasStatus() {
		return out
	}
	children := map[string]map[string]any{}
	for _, c := range adopted {
		if children[c.GetKind()] == nil {
			children[c.GetKind()] = map[string]any{}
		}
		children[c.GetKind()][c.GetName()] = c.Object
	}
	in.Children = children
	sres, err := k.Status(ctx, in)
	if err != nil {
		return append(out, f.failure(asRenderError(statusFile, err), what, empty))
	}
	if sres.Status == nil {
		return out
	}
	out = append(out, f.engineStatus(sres.Status)...)
	if r.crd != nil {
		out = append(out, f.statusFields(r.crd, sres.Status)...)
	}
	return out
}

// nondeterministic renders the children a second time with the same input
// and reports the files whose children differ.
func (r *renderer) nondeterministic(ctx context.Context, in render.Input, first *render.Result) []Finding {
	rendered, err := r.f.kind.Children(ctx, in, catalog.Cluster{})
	if err != nil {
		return nil
	}
	second := rendered.Result
	byFile := func(res *render.Result) map[string][]map[string]any {
		m := map[string][]map[string]any{}
		for _, c := range res.Manifests {
			m[c.Template] = append(m[c.Template], c.Object.Object)
		}
		return m
	}
	a, b := byFile(first), byFile(second)
	files := make([]string, 0, len(first.Nondeterministic))
	for file := range first.Nondeterministic {
		files = append(files, file)
	}
	slices.Sort(files)
	var out []Finding
	for _, file := range files {
		if reflect.DeepEqual(a[file], b[file]) {
			continue
		}
		fns := first.Nondeterministic[file]
		line := 0
		if len(fns) > 0 {
			_, line = r.f.locateText(file, fns[0])
		}
		out = append(out, r.f.at(file, line, CodeNondeterministic,
			"renders differently every time (%s): the operator applies it only when it is created and when the object's spec changes (reason NonDeterministic otherwise); reuse a live value through lookup to keep it stable",
			strings.Join(fns, ", ")))
	}
	return out
}
