package lint

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/render"
)

// engineLabels are the labels the engine sets on every child
// (ownership.Adopt): a template's value is overwritten, and the operator
// selects and prunes children by them.
var engineLabels = []string{ownership.LabelManagedBy, ownership.LabelParentUID}

// enginePrefix is the engine's annotation prefix. Of its annotations a
// template may set only operator.tmplop.io/prune; the engine sets
// operator.tmplop.io/parent itself (LNT205).
const enginePrefix = "operator.tmplop.io/"

// serverFields are metadata fields the API server sets. In an apply they
// are refused (managedFields, uid of another object), turn the apply into
// a conditional one that fails once the object changes (resourceVersion),
// or are ignored.
var serverFields = []string{"uid", "resourceVersion", "generation", "managedFields", "creationTimestamp",
	"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"}

// locate finds the line of a template text in the child's file first, then
// in the other template files (helpers hold labels more often than not).
func (f *folder) locate(file string, find func(text string) int) (string, int) {
	if line := find(f.templates[file]); line > 0 {
		return file, line
	}
	names := make([]string, 0, len(f.templates))
	for name := range f.templates {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if name == file {
			continue
		}
		if line := find(f.templates[name]); line > 0 {
			return name, line
		}
	}
	return file, 0
}

func (f *folder) locateKey(file, key string) (string, int) {
	return f.locate(file, func(text string) int { return keyLine(text, key) })
}

func (f *folder) locateText(file, s string) (string, int) {
	return f.locate(file, func(text string) int { return textLine(text, s) })
}

// childFields checks what a template sets on a child against what the
// engine and the API server set.
func (f *folder) childFields(m render.Manifest) []Finding {
	var out []Finding
	obj := m.Object
	// Not the child's name: it changes with the object, the finding does not.
	id := fmt.Sprintf("%s (document %d)", obj.GetKind(), m.Index)
	meta, _ := obj.Object["metadata"].(map[string]any)
	if _, ok := meta["ownerReferences"]; ok {
		file, line := f.locateKey(m.Template, "ownerReferences")
		out = append(out, f.at(file, line, CodeEngineField,
			"%s sets metadata.ownerReferences: the engine sets the controller reference to the object; remove it", id))
	}
	for _, l := range engineLabels {
		if _, ok := obj.GetLabels()[l]; ok {
			file, line := f.locateText(m.Template, l)
			out = append(out, f.at(file, line, CodeEngineField,
				"%s sets the label %s: the engine sets it on every child and selects children by it; remove it", id, l))
		}
	}
	ann := obj.GetAnnotations()
	keys := make([]string, 0, len(ann))
	for a := range ann {
		keys = append(keys, a)
	}
	slices.Sort(keys)
	for _, a := range keys {
		if !strings.HasPrefix(a, enginePrefix) {
			continue
		}
		file, line := f.locateText(m.Template, a)
		switch a {
		case ownership.AnnotationPrune:
			if ann[a] != "disabled" {
				out = append(out, f.at(file, line, CodePruneValue,
					"%s sets %s: %q, which does nothing: only \"disabled\" keeps the child from being pruned", id, a, ann[a]))
			}
		case ownership.AnnotationParent:
			out = append(out, f.at(file, line, CodeParentAnnot,
				"%s sets %s: the engine sets it on every child and overwrites this value; it is the consent to adopt an existing object, set with kubectl annotate, not in a template", id, a))
		default:
			out = append(out, f.at(file, line, CodeEngineField,
				"%s sets the annotation %s: the %s annotations are the engine's (only %s may be set by a template); remove it", id, a, enginePrefix, ownership.AnnotationPrune))
		}
	}
	for _, field := range serverFields {
		if _, ok := meta[field]; ok {
			file, line := f.locateKey(m.Template, field)
			out = append(out, f.at(file, line, CodeServerField,
				"%s sets metadata.%s, which the API server sets: an apply with it fails or ignores it; remove it", id, field))
		}
	}
	if _, ok := obj.Object["status"]; ok {
		file, line := f.locate(m.Template, func(text string) int { return topKeyLine(text, "status") })
		out = append(out, f.at(file, line, CodeChildStatus,
			"%s sets status: server-side apply of the object ignores it (status is written through the status subresource, by the child's own controller)", id))
	}
	return out
}

// topKeyLine is the line of `key:` at column 0.
func topKeyLine(text, key string) int {
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, key+":") {
			return i + 1
		}
	}
	return 0
}

// adopt adopts the children as a reconcile does (reconcile.Adopt, on
// copies), and reports the children the kind may not have (LNT207) and
// the children rendered twice (LNT208, when dups). It returns the adopted
// children, for status.yaml.
func (f *folder) adopt(parent *unstructured.Unstructured, ms []render.Manifest, namespaced func(schema.GroupVersionKind) bool, what string, dups bool) ([]*unstructured.Unstructured, []Finding) {
	copies := make([]render.Manifest, len(ms))
	for i, m := range ms {
		copies[i] = m
		copies[i].Object = m.Object.DeepCopy()
	}
	scope := func(gvk schema.GroupVersionKind) (bool, error) { return namespaced(gvk), nil }
	children, problems, err := reconcile.Adopt(f.kind, parent, copies, scope, ownership.Policy{Manager: "operator"})
	if err != nil {
		return nil, []Finding{f.at("", 0, CodeOutside, "%v (%s)", err, what)}
	}
	var out []Finding
	for _, p := range problems {
		m := p.Manifest
		switch {
		case p.Duplicate != nil && dups:
			child := m.Object
			id := fmt.Sprintf("%s %s", child.GroupVersionKind().GroupKind(), objectPath(child.GetNamespace(), child.GetName()))
			where := fmt.Sprintf("document %d of %s", p.Duplicate.Index, p.Duplicate.Template)
			if p.Duplicate.Template == m.Template {
				where = fmt.Sprintf("document %d of this file", p.Duplicate.Index)
			}
			out = append(out, f.at(m.Template, 0, CodeDuplicateChild,
				"document %d renders %s, which %s renders too: the operator refuses to apply either (%s)", m.Index, id, where, what))
		case p.Err != nil:
			// Another controller: LNT202 already says ownerReferences.
			if _, other := errors.AsType[*ownership.ControllerError](p.Err); !other {
				out = append(out, f.at(m.Template, 0, CodeOutside, "%v (%s)", p.Err, what))
			}
		}
	}
	adopted := make([]*unstructured.Unstructured, len(children))
	for i, c := range children {
		adopted[i] = c.Object
	}
	return adopted, out
}

func objectPath(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
