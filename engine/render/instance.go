package render

import (
	"fmt"
	"text/template"
)

// freeInstances is how many idle instances a Set keeps: about the number
// of renders of one folder that run at once.
const freeInstances = 16

// instance is a clone of a Set's templates with every function bound to
// its holder. Renders take one, point its holder at their state, and give
// it back: cloning a set and binding ~230 functions costs more than a
// render, so it is done once per concurrent render, not per render.
type instance struct {
	tmpl *template.Template
	h    *holder
}

func (s *Set) get() (*instance, error) {
	select {
	case inst := <-s.free:
		return inst, nil
	default:
	}
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

func (s *Set) put(inst *instance) {
	select {
	case s.free <- inst:
	default:
	}
}
