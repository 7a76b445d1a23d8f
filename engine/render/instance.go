package render

import (
	"fmt"
	"text/template"
	"time"

	"github.com/tmplop/operator/engine/render/internal/budget"
)

// freeInstances is how many idle instances a Set keeps: about the number
// of renders of one folder that run at once.
const freeInstances = 16

// instance is a clone of a Set's templates with every function bound to
// its holder. A render checks one out, bound to its state, and checks it
// back in: cloning a set and binding ~230 functions costs more than a
// render, so it is done once per concurrent render, not per render.
type instance struct {
	tmpl *template.Template
	h    *holder
}

// holder is what the functions bound to one instance read: the state of
// the render that has the instance checked out, and what the instance
// keeps from one render to the next.
//
// The state is a pointer, set at checkout and cleared at checkin, rather
// than a value the instance owns and resets: a state outlives its render
// (a late timer may still stop it, and the caller of an abandoned render
// reads it), so each render has its own (see renderState).
type holder struct {
	st *renderState
	// root is the instance's template set, and runner a clone of it where
	// tpl strings without defines of their own are parsed (tpl.go), with
	// names, every function's, for the parser to check.
	root, runner *template.Template
	names        template.FuncMap
	// zones are the time zones loaded for dateInZone (dates.go).
	zones map[string]*time.Location
}

// meter is the budget of the render that has the instance.
func (h *holder) meter() *budget.Meter { return &h.st.meter }

// checkout takes an idle instance of s, or builds one, for the render
// whose state is st: until checkin, every function of the instance reads
// st.
func (s *Set) checkout(st *renderState) (*instance, error) {
	var inst *instance
	select {
	case inst = <-s.free:
	default:
		var err error
		if inst, err = s.newInstance(); err != nil {
			return nil, err
		}
	}
	inst.h.st = st
	return inst, nil
}

// checkin gives inst back once its render has ended.
func (s *Set) checkin(inst *instance) {
	inst.h.st = nil
	select {
	case s.free <- inst:
	default:
	}
}

func (s *Set) newInstance() (*instance, error) {
	// Clone shares the parse trees and copies only the name and function
	// tables, so binding functions to it leaves s untouched.
	t, err := s.tmpl.Clone()
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("clone templates: %v", err), err: err}
	}
	h := &holder{root: t}
	h.names, _ = parseFuncs()
	t.Funcs(funcsFor(h))
	t.Funcs(bindTemplate(h, t, s.scalar))
	return &instance{tmpl: t, h: h}, nil
}
