package render

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/tmplop/operator/engine/render/internal/budget"
)

// tplName names the template a tpl string is parsed as. It is not a file
// name, so errors inside a tpl string are reported at the tpl call site.
const tplName = "tpl"

// What a tpl call is charged: parse trees take several times the text, and
// a string with defines of its own needs a clone of the set.
const (
	tplCostPerByte = 8
	cloneCost      = 64 << 10
)

// builtinNames are text/template's builtins that no function of ours
// replaces: parse.Parse checks that every name called exists.
var builtinNames = map[string]any{
	"and": true, "or": true, "not": true, "call": true, "index": true, "len": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
}

// bindTemplate returns include and tpl for templates running in t.
func bindTemplate(h *holder, t *template.Template, scalar map[string]bool) template.FuncMap {
	return template.FuncMap{"include": h.includeFunc(t), "tpl": h.tplFunc(t, scalar)}
}

// includeFunc executes a named template into a string, so that its output
// can be piped (`include "labels" . | nindent 4`), which {{ template }} cannot.
func (h *holder) includeFunc(t *template.Template) func(string, any) (string, error) {
	return func(name string, data any) (string, error) {
		m := h.meter()
		if err := m.Check(); err != nil {
			return "", budgetFuncError(err)
		}
		// The trees of tpl strings are not helpers: one may be what another
		// object's render left in the runner.
		if strings.HasPrefix(name, tplName+"#") || t.Lookup(name) == nil {
			return "", funcErrorf("include: no template named %q", name)
		}
		if err := m.Enter("include " + strconv.Quote(name)); err != nil {
			return "", budgetFuncError(err)
		}
		defer m.Leave()
		w := budget.NewWriter(m, "include "+strconv.Quote(name))
		if err := t.ExecuteTemplate(w, name, data); err != nil {
			return "", passUp(err)
		}
		return w.String(), nil
	}
}

// tplFunc renders a string as a template, e.g. a template held in the spec.
// It can include the folder's helpers, and its own {{ define }}s stay local
// to the call. Its trees are guarded as the folder's are: tpl of a string a
// tenant wrote is held to the same budget.
//
// Isolating the defines takes a clone of the set, which copies its function
// tables: 80 KiB and a third of a millisecond a call, so a loop of tpl
// calls would allocate without bound. A string without defines, the
// common case, has nothing to isolate: it is parsed alone and added to a
// clone made once per instance (the runner), or to the private clone of
// the tpl call it runs in, under a name of its nesting depth.
func (h *holder) tplFunc(parent *template.Template, scalar map[string]bool) func(string, any) (string, error) {
	return func(text string, data any) (string, error) {
		m := h.meter()
		if err := m.Enter("tpl"); err != nil {
			return "", budgetFuncError(err)
		}
		defer m.Leave()
		// Parsing costs a multiple of what the text weighs.
		trees, err := budget.Bounded(m, tplCostPerByte*int64(len(text)), func() string { return fmt.Sprintf("tpl of %d bytes", len(text)) },
			func() (map[string]*parse.Tree, error) {
				trees, err := parse.Parse(tplName, text, "", "", h.names, builtinNames)
				if err != nil {
					return nil, tplParseError(err)
				}
				return trees, nil
			}, nil)
		if err != nil {
			return "", passUp(err)
		}
		var t *template.Template
		if len(trees) == 1 {
			t, err = h.tplAlone(parent, trees[tplName], scalar)
		} else {
			t, err = h.tplWithDefines(parent, text, scalar)
		}
		if err != nil {
			return "", passUp(err)
		}
		w := budget.NewWriter(m, "tpl")
		// t itself, not its name: a name may still map to an earlier tree
		// when this one is empty (text/template keeps a non-empty one).
		err = t.Execute(w, data)
		if len(trees) == 1 {
			t.Tree = nil // the runner keeps no string once its call is over
		}
		if err != nil {
			return "", passUp(err)
		}
		return strings.ReplaceAll(w.String(), noValue, ""), nil
	}
}

// tplAlone is the template of a tpl string without defines of its own:
// its tree added to the runner, or to the clone of the tpl call it runs
// in, under the name of its nesting depth.
func (h *holder) tplAlone(parent *template.Template, tree *parse.Tree, scalar map[string]bool) (*template.Template, error) {
	target := parent
	if parent == h.root {
		var err error
		if target, err = h.tplRunner(scalar); err != nil {
			return nil, funcErrorf("tpl: %v", err)
		}
	}
	guardTree(tree, scalar)
	t, err := target.AddParseTree(fmt.Sprintf("%s#%d", tplName, h.meter().Depth()), tree)
	if err != nil {
		return nil, funcErrorf("tpl: %v", err)
	}
	return t, nil
}

// tplWithDefines is the template of a tpl string that defines templates:
// parsed into a clone of parent, charged, so that its defines stay its own.
func (h *holder) tplWithDefines(parent *template.Template, text string, scalar map[string]bool) (*template.Template, error) {
	c, err := budget.Bounded(h.meter(), cloneCost, func() string { return "tpl with defines of its own" },
		func() (*template.Template, error) {
			c, err := parent.Clone()
			if err != nil {
				return nil, funcErrorf("tpl: %v", err)
			}
			return c, nil
		}, nil)
	if err != nil {
		return nil, err
	}
	// Rebind include and tpl so they see the string's own defines; the
	// other functions, bound to h, were copied from parent by Clone.
	c.Funcs(bindTemplate(h, c, scalar))
	t, err := c.New(tplName).Parse(text)
	if err != nil {
		return nil, tplParseError(err)
	}
	guardNew(c, parent, scalar)
	return t, nil
}

// tplRunner is the clone of the instance's set where tpl strings are run.
func (h *holder) tplRunner(scalar map[string]bool) (*template.Template, error) {
	if h.runner == nil {
		r, err := h.root.Clone()
		if err != nil {
			return nil, err
		}
		r.Funcs(bindTemplate(h, r, scalar))
		h.runner = r
	}
	return h.runner, nil
}

func tplParseError(err error) error {
	if _, line, rest, ok := splitLocation(err.Error()); ok && line > 0 {
		return funcErrorf("tpl: line %d of the template string: %s", line, rest)
	}
	return funcErrorf("tpl: %v", err)
}

// passUp returns a sticky funcError found in err instead of err itself; see
// funcError.sticky. A budget error is made sticky on the way.
func passUp(err error) error {
	if fe, ok := errors.AsType[*funcError](err); ok && fe.sticky {
		return fe
	}
	if be, ok := errors.AsType[*BudgetError](err); ok {
		return budgetFuncError(be)
	}
	return err
}

func budgetFuncError(err error) *funcError {
	return &funcError{sticky: true, msg: err.Error(), cause: err}
}
