package lint

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"text/template/parse"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/catalog/childkinds"
	"github.com/tmplop/operator/engine/render"
)

// call is one call of a function found in a parse tree.
type call struct {
	file string
	line int
	args []parse.Node // the arguments written after the function's name
}

// treeLine is the 1-based line of n in t's file.
func treeLine(t *parse.Tree, n parse.Node) int {
	if t == nil || n == nil {
		return 0
	}
	loc, _ := t.ErrorContext(n)
	// loc is file:line:col
	parts := strings.Split(loc, ":")
	if len(parts) < 3 {
		return 0
	}
	line, _ := strconv.Atoi(parts[len(parts)-2])
	return line
}

// findCalls returns every call of the functions named in fns in trees,
// sorted by file and line. Piped calls (`x | lookup ...`) count: the piped
// value is their last argument, not one of args.
func findCalls(trees map[string]*parse.Tree, fns ...string) map[string][]call {
	out := map[string][]call{}
	for _, t := range trees {
		var walkPipe func(p *parse.PipeNode)
		walkPipe = func(p *parse.PipeNode) {
			if p == nil {
				return
			}
			for _, c := range p.Cmds {
				if len(c.Args) > 0 {
					if id, ok := c.Args[0].(*parse.IdentifierNode); ok && slices.Contains(fns, id.Ident) {
						out[id.Ident] = append(out[id.Ident], call{file: t.ParseName, line: treeLine(t, c), args: c.Args[1:]})
					}
				}
				for _, a := range c.Args {
					switch a := a.(type) {
					case *parse.PipeNode:
						walkPipe(a)
					case *parse.ChainNode:
						if p, ok := a.Node.(*parse.PipeNode); ok {
							walkPipe(p)
						}
					}
				}
			}
		}
		render.WalkLists(t.Root, func(list *parse.ListNode) {
			for _, n := range list.Nodes {
				switch n := n.(type) {
				case *parse.ActionNode:
					walkPipe(n.Pipe)
				case *parse.TemplateNode:
					walkPipe(n.Pipe)
				case *parse.IfNode:
					walkPipe(n.Pipe)
				case *parse.WithNode:
					walkPipe(n.Pipe)
				case *parse.RangeNode:
					walkPipe(n.Pipe)
				}
			}
		})
	}
	for _, cs := range out {
		slices.SortFunc(cs, func(a, b call) int {
			if a.file != b.file {
				return strings.Compare(a.file, b.file)
			}
			return a.line - b.line
		})
	}
	return out
}

// literal returns the text of a string literal argument.
func literal(n parse.Node) (string, bool) {
	s, ok := n.(*parse.StringNode)
	if !ok {
		return "", false
	}
	return s.Text, true
}

// staticChecks reads the folder's parse trees: lookups of undeclared or
// computed kinds, lookups in fixed namespaces, declared lookups nothing
// reads, child kinds `operator rbac` cannot read; and it remembers the
// literal required messages of each file for the empty-spec findings.
func (f *folder) staticChecks(namespaced func(schema.GroupVersionKind) bool) []Finding {
	k := f.kind
	calls := findCalls(k.Templates.Trees(), "lookup", "lookupSelect", "required")
	out := f.lookupChecks(calls, namespaced)

	f.required = map[string][]string{}
	for _, c := range calls["required"] {
		if len(c.args) == 0 {
			continue
		}
		if msg, ok := literal(c.args[0]); ok && !slices.Contains(f.required[c.file], msg) {
			f.required[c.file] = append(f.required[c.file], msg)
		}
	}

	if len(k.Spec.Children) == 0 {
		_, unknown, err := childkinds.Read(k.Templates, k.NeverApplied())
		if err == nil {
			for _, u := range unknown {
				out = append(out, f.at(u.Where.File, u.Where.Line, CodeComputedChild,
					"%s: `operator rbac` cannot know which kind this child is; declare the kinds it can render in kind.yaml children", u.Reason))
			}
		}
	}
	return out
}

// lookupChecks reads the literal lookup and lookupSelect calls: kinds
// kind.yaml does not declare, computed kinds, fixed namespaces, and
// declared kinds nothing reads.
func (f *folder) lookupChecks(calls map[string][]call, namespaced func(schema.GroupVersionKind) bool) []Finding {
	var out []Finding
	read := map[schema.GroupKind]bool{}
	computed := false
	for _, fn := range []string{"lookup", "lookupSelect"} {
		for _, c := range calls[fn] {
			apiVersion, kind, ok := literalKind(c)
			if !ok {
				computed = true
				out = append(out, f.at(c.file, c.line, CodeComputedLookup,
					"%s with a computed apiVersion or kind: lint cannot check that kind.yaml declares it (a render refuses an undeclared kind)", fn))
				continue
			}
			gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
			read[gvk.GroupKind()] = true
			if fd, ok := f.lookupCall(fn, c, apiVersion, kind, namespaced); ok {
				out = append(out, fd)
			}
		}
	}
	if computed {
		return out
	}
	for _, l := range f.kind.Spec.Lookups {
		gk := schema.FromAPIVersionAndKind(l.APIVersion, l.Kind).GroupKind()
		if !read[gk] {
			out = append(out, f.at(catalog.KindFile, keyLineAfter(f.kindYAML, "lookups", l.Kind), CodeUnusedLookup,
				"lookups declares %s, which no template reads with a literal lookup or lookupSelect: the operator caches it for nothing (unless a tpl string reads it)", gk))
		}
	}
	return out
}

// literalKind reads the apiVersion and kind of a lookup call written as
// literals.
func literalKind(c call) (apiVersion, kind string, ok bool) {
	if len(c.args) < 2 {
		return "", "", false
	}
	apiVersion, ok1 := literal(c.args[0])
	kind, ok2 := literal(c.args[1])
	return apiVersion, kind, ok1 && ok2
}

// lookupCall checks one literal lookup of gvk against kind.yaml: declared,
// and not in a fixed namespace that the folder's lookup policy refuses
// unless the object happens to be there.
func (f *folder) lookupCall(fn string, c call, apiVersion, kind string, namespaced func(schema.GroupVersionKind) bool) (Finding, bool) {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	gk := gvk.GroupKind()
	_, _, err := f.kind.ResolveLookup(gk, namespaced(gvk), "", "")
	if errors.Is(err, catalog.ErrNotDeclared) {
		return f.at(c.file, c.line, CodeUndeclaredLookup,
			"%s %q %q: %s is not declared in kind.yaml lookups, so every render that reaches this call fails; add {apiVersion: %s, kind: %s} to lookups",
			fn, apiVersion, kind, gk, apiVersion, kind), true
	}
	if err == nil || len(c.args) < 3 {
		return Finding{}, false // cluster-scoped, allNamespaces, or the parent's namespace
	}
	ns, ok := literal(c.args[2])
	switch {
	case !ok:
		return Finding{}, false
	case ns == "":
		return f.at(c.file, c.line, CodeLookupNamespace,
			"%s of %s in all namespaces: always refused for a namespaced kind; read .Namespace, or set allNamespaces: true on the lookup in kind.yaml",
			fn, gk), true
	}
	return f.at(c.file, c.line, CodeLookupNamespace,
		"%s of %s in namespace %q: refused unless the object is in that namespace; read .Namespace, or set allNamespaces: true on the lookup in kind.yaml",
		fn, gk, ns), true
}

// keyLineAfter is the line of the first line holding value after the
// first line of key (kind.yaml's lookups: ... kind: Pod), 0 if none.
func keyLineAfter(text, key, value string) int {
	start := keyLine(text, key)
	if start == 0 {
		return 0
	}
	lines := strings.Split(text, "\n")
	for i := start; i < len(lines); i++ {
		if strings.Contains(lines[i], value) {
			return i + 1
		}
	}
	return start
}
