package render

import (
	"text/template/parse"
)

// Trees returns a copy of the parse tree of every template of the set, by
// template name: one per file (named after the file) and one per
// {{ define }} (named after the define; its ParseName is the file that
// defines it). It is what static analysis of a folder reads, such as
// `operator rbac` finding the kinds the child templates render.
//
// The trees are copies, so changing them cannot change what the set
// renders. The render guards (guard.go) are taken out of the copies: no
// __tick or __emit calls appear; a {{ template "x" . }} appears as the
// {{ include "x" . }} it was rewritten into, which prints the same. Node
// positions are those of the files, so Tree.ErrorContext tells file:line.
func (s *Set) Trees() map[string]*parse.Tree {
	out := map[string]*parse.Tree{}
	for _, t := range s.tmpl.Templates() {
		if t.Tree == nil || t.Tree.Root == nil || t.Name() == rootName {
			continue
		}
		c := t.Tree.Copy()
		unguardList(c.Root)
		out[t.Name()] = c
	}
	return out
}

// unguardList undoes guardList on a copied tree: the tick that starts every
// range body and the emit at the end of printing pipelines are removed.
func unguardList(root *parse.ListNode) {
	WalkLists(root, func(list *parse.ListNode) {
		nodes := list.Nodes[:0]
		for _, n := range list.Nodes {
			if a, ok := n.(*parse.ActionNode); ok {
				if isCall(a.Pipe, tickFunc) {
					continue
				}
				if k := len(a.Pipe.Cmds); k > 1 && isIdent(a.Pipe.Cmds[k-1], emitFunc) {
					a.Pipe.Cmds = a.Pipe.Cmds[:k-1]
				}
			}
			nodes = append(nodes, n)
		}
		list.Nodes = nodes
	})
}

// isCall reports whether p is exactly a call of the function name (the
// tick's argument is its weight, see guard.go).
func isCall(p *parse.PipeNode, name string) bool {
	if p == nil || len(p.Decl) != 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) == 0 {
		return false
	}
	id, ok := p.Cmds[0].Args[0].(*parse.IdentifierNode)
	return ok && id.Ident == name
}

func isIdent(c *parse.CommandNode, name string) bool {
	if len(c.Args) != 1 {
		return false
	}
	id, ok := c.Args[0].(*parse.IdentifierNode)
	return ok && id.Ident == name
}
