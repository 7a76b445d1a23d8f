package lint

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/render"
)

// lookup is the lint renders' render.Lookup: a declared kind reads as
// nothing there, anything the operator would refuse is refused by the
// folder's own lookup policy (catalog.Kind.ResolveLookup), with the
// operator's message.
type lookup struct {
	kind       *catalog.Kind
	namespaced func(schema.GroupVersionKind) bool
	parentNS   string
}

func newLookup(k *catalog.Kind, namespaced func(schema.GroupVersionKind) bool, parentNS string) *lookup {
	return &lookup{kind: k, namespaced: namespaced, parentNS: parentNS}
}

func (l *lookup) resolve(apiVersion, kind, namespace string) error {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	_, _, err := l.kind.ResolveLookup(gvk.GroupKind(), l.namespaced(gvk), namespace, l.parentNS)
	return err
}

func (l *lookup) Get(apiVersion, kind, namespace, _ string) (map[string]any, error) {
	return nil, l.resolve(apiVersion, kind, namespace)
}

func (l *lookup) List(apiVersion, kind, namespace, selector string) ([]map[string]any, error) {
	if err := l.resolve(apiVersion, kind, namespace); err != nil {
		return nil, err
	}
	if _, err := labels.Parse(selector); err != nil {
		return nil, fmt.Errorf("%w: selector %q: %v", render.ErrLookupRefused, selector, err)
	}
	return nil, nil
}

// demoted prefixes the other child files in a one-child set: as helpers,
// their defines stay, their output goes.
const demoted = "_lint-demoted."

// fileSet is the folder's set with child the only child template: the
// other children and status.yaml become helpers, so that a render of it
// fails or succeeds on that file alone.
func (f *folder) fileSet(child string) (*render.Set, error) {
	if s, ok := f.fileSets[child]; ok {
		return s, nil
	}
	files := make(map[string]string, len(f.templates))
	for name, text := range f.templates {
		if name == child || strings.HasPrefix(name, "_") {
			files[name] = text
		} else {
			files[demoted+name] = text
		}
	}
	s, err := render.Parse(files)
	if err != nil {
		return nil, err
	}
	f.fileSets[child] = s
	return s, nil
}

// childResult is what one render of the children gave.
type childResult struct {
	manifests []render.Manifest
	failures  []*render.Error // one per failing file
	res       *render.Result  // the whole render, when it succeeded
}

// renderChildren renders every child template. When the folder's render
// fails, each child file is rendered on its own, so that every failing
// file is reported and the others' children are still checked.
func (f *folder) renderChildren(ctx context.Context, in render.Input) childResult {
	rendered, err := f.kind.Children(ctx, in, catalog.Cluster{})
	if err == nil {
		return childResult{manifests: rendered.Manifests, res: rendered.Result}
	}
	if !f.kind.TemplatesRenderAlone() {
		// A chart's templates render only with their chart's scopes.
		return childResult{failures: []*render.Error{asRenderError("", err)}}
	}
	var out childResult
	for _, child := range f.kind.Templates.ChildTemplates() {
		set, perr := f.fileSet(child)
		if perr != nil {
			out.failures = append(out.failures, asRenderError(child, perr))
			continue
		}
		r, err := set.Children(ctx, in)
		if err != nil {
			out.failures = append(out.failures, asRenderError(child, err))
			continue
		}
		out.manifests = append(out.manifests, r.Manifests...)
	}
	if len(out.failures) == 0 {
		// Failed together, not alone (a budget over the whole folder).
		out.failures = append(out.failures, asRenderError("", err))
	}
	return out
}

// asRenderError returns err as a *render.Error located in a real file
// (file when it names none).
func asRenderError(file string, err error) *render.Error {
	var re *render.Error
	if !errors.As(err, &re) {
		return &render.Error{Template: file, Message: err.Error()}
	}
	c := *re
	c.Template = strings.TrimPrefix(c.Template, demoted)
	c.Message = strings.ReplaceAll(c.Message, demoted, "")
	if c.Template == "" {
		c.Template = file
	}
	return &c
}

// manifestProblem classifies a render error about a rendered document by
// render's mark: LNT200 (a child without apiVersion, kind or name, a List,
// or labels or annotations that are not strings), LNT201 (not a YAML mapping), or "" for any other failure.
func manifestProblem(e *render.Error) string {
	de, ok := errors.AsType[*render.DocumentError](e)
	switch {
	case !ok:
		return ""
	case de.NotYAML:
		return CodeNotYAML
	}
	return CodeManifest
}

// failure turns a failed render of file into a finding. what says what it
// was rendered against; empty is true for the empty spec, where a failure
// is expected (required fields) and only informative.
func (f *folder) failure(e *render.Error, what string, empty bool) Finding {
	file := e.Template
	var be *render.BudgetError
	switch {
	case errors.As(e, &be):
		return f.at(file, e.Line, CodeBudget, "%s (%s)", e.Message, what)
	case errors.Is(e, render.ErrLookupRefused):
		return f.at(file, e.Line, CodeLookupRefused, "%s (%s)", e.Message, what)
	case empty:
		msg := e.Message
		var others []string
		for _, r := range f.required[file] {
			if r != msg {
				others = append(others, fmt.Sprintf("%q", r))
			}
		}
		if len(others) > 0 {
			return f.at(file, e.Line, CodeEmptySpec, "%s (%s; the file's other required checks: %s)", msg, what, strings.Join(others, ", "))
		}
		return f.at(file, e.Line, CodeEmptySpec, "%s (%s)", msg, what)
	}
	if code := manifestProblem(e); code != "" {
		return f.at(file, e.Line, code, "%s (%s)", e.Message, what)
	}
	return f.at(file, e.Line, CodeRenderFailed, "%s (%s)", e.Message, what)
}
