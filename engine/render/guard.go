package render

import (
	"reflect"
	"strconv"
	"text/template"
	"text/template/parse"
)

// text/template has no hook for a deadline or a step count: a range over
// a large list, or a template that invokes itself, runs until it is done.
// So the parse trees are rewritten once, at parse time, to pass through the
// budget at every place where a render can loop or recurse:
//
//   - every range body starts with a call of tickFunc, which checks the
//     deadline (a loop that prints nothing and calls nothing is otherwise
//     unstoppable) and charges the iteration: text/template allocates
//     about 100 bytes to evaluate a command (a call, a field), garbage no
//     function sees, so a loop of cheap calls would allocate without
//     bound until its deadline. The tick charges iterCost and cmdCost for
//     each command of the body, counted here: a sixth of what evaluation
//     allocates, enough to hold it to a multiple of the output budget, a
//     few hundred KiB for a thousand iterations of a large body;
//   - every {{ template "x" . }} becomes {{ include "x" . }}, which counts
//     calls and nesting (the two print the same bytes);
//   - every action that prints a value not known to be a scalar is piped
//     through emitFunc, which refuses values too large to print: a list
//     holding itself twice, ten levels deep, is 20 elements that fmt would
//     expand into a million.
//
// Straight-line template code between those points is bounded by the size
// of the template, and every function that can build large values checks
// the budget itself (limits.go), so a render notices its deadline within a
// bounded amount of work.

// Names of the functions the rewritten trees call. They are in every
// template's function map, so a template could call them too; it would
// gain nothing.
const (
	tickFunc = "__tick"
	emitFunc = "__emit"
)

// guardTree rewrites one parse tree in place. scalar tells which functions
// return values that print as a bounded scalar, for which no emit is needed.
func guardTree(tree *parse.Tree, scalar map[string]bool) {
	if tree == nil || tree.Root == nil {
		return
	}
	WalkLists(tree.Root, func(list *parse.ListNode) { guardList(tree, list, scalar) })
}

// guardList guards the nodes of one list; WalkLists has guarded the lists
// under it already, so a range body's weight counts its guards.
func guardList(tree *parse.Tree, list *parse.ListNode, scalar map[string]bool) {
	for i, n := range list.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			if len(n.Pipe.Decl) == 0 && needsEmit(n.Pipe, scalar) {
				n.Pipe.Cmds = append(n.Pipe.Cmds, command(n.Pos, parse.NewIdentifier(emitFunc).SetTree(tree).SetPos(n.Pos)))
			}
		case *parse.RangeNode:
			if n.List != nil && !startsWithTick(n.List) {
				weight := commands(n.List) + 1
				arg := &parse.NumberNode{NodeType: parse.NodeNumber, Pos: n.Pos, IsInt: true, Int64: int64(weight), Text: strconv.Itoa(weight)}
				tick := &parse.ActionNode{NodeType: parse.NodeAction, Pos: n.Pos, Line: n.Line,
					Pipe: pipe(n.Pos, n.Line, command(n.Pos, parse.NewIdentifier(tickFunc).SetTree(tree).SetPos(n.Pos), arg))}
				n.List.Nodes = append([]parse.Node{tick}, n.List.Nodes...)
			}
		case *parse.TemplateNode:
			list.Nodes[i] = includeAction(tree, n)
		}
	}
}

// WalkLists calls f for every list of nodes under list (the bodies of if,
// with and range and their else), the innermost first, then for list
// itself: the one recursion through a parse tree's branches that the
// render's guards and the folder's static checks share.
func WalkLists(list *parse.ListNode, f func(*parse.ListNode)) {
	if list == nil {
		return
	}
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *parse.IfNode:
			WalkLists(n.List, f)
			WalkLists(n.ElseList, f)
		case *parse.WithNode:
			WalkLists(n.List, f)
			WalkLists(n.ElseList, f)
		case *parse.RangeNode:
			WalkLists(n.List, f)
			WalkLists(n.ElseList, f)
		case *parse.ListNode:
			WalkLists(n, f)
		}
	}
	f(list)
}

// includeAction is {{ include "name" pipeline }} for {{ template "name"
// pipeline }}: the same output, through the function that counts calls.
func includeAction(tree *parse.Tree, n *parse.TemplateNode) *parse.ActionNode {
	var data parse.Node = &parse.NilNode{NodeType: parse.NodeNil, Pos: n.Pos}
	if n.Pipe != nil {
		data = n.Pipe
	}
	name := &parse.StringNode{NodeType: parse.NodeString, Pos: n.Pos, Quoted: strconv.Quote(n.Name), Text: n.Name}
	cmd := command(n.Pos, parse.NewIdentifier("include").SetTree(tree).SetPos(n.Pos), name, data)
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: n.Pos, Line: n.Line, Pipe: pipe(n.Pos, n.Line, cmd)}
}

func command(pos parse.Pos, args ...parse.Node) *parse.CommandNode {
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: args}
}

func pipe(pos parse.Pos, line int, cmds ...*parse.CommandNode) *parse.PipeNode {
	return &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos, Line: line, Cmds: cmds}
}

// Charged by every range iteration, and for every command of its body.
const (
	iterCost = 16
	cmdCost  = 16
)

// commands counts the commands a range body evaluates in one iteration,
// those of the pipelines nested in arguments included: those of nested
// ranges count at their own ticks, but not their pipelines, evaluated
// once an iteration of this one.
func commands(list *parse.ListNode) int {
	if list == nil {
		return 0
	}
	n := 0
	for _, node := range list.Nodes {
		switch node := node.(type) {
		case *parse.ActionNode:
			n += pipeCommands(node.Pipe)
		case *parse.IfNode:
			n += pipeCommands(node.Pipe) + commands(node.List) + commands(node.ElseList)
		case *parse.WithNode:
			n += pipeCommands(node.Pipe) + commands(node.List) + commands(node.ElseList)
		case *parse.RangeNode:
			n += pipeCommands(node.Pipe) + commands(node.ElseList)
		case *parse.TemplateNode:
			n += 1 + pipeCommands(node.Pipe)
		}
	}
	return n
}

func pipeCommands(p *parse.PipeNode) int {
	if p == nil {
		return 0
	}
	n := len(p.Cmds)
	for _, c := range p.Cmds {
		for _, arg := range c.Args {
			switch a := arg.(type) {
			case *parse.PipeNode:
				n += pipeCommands(a)
			case *parse.ChainNode:
				if p, ok := a.Node.(*parse.PipeNode); ok {
					n += pipeCommands(p)
				}
			}
		}
	}
	return n
}

func startsWithTick(list *parse.ListNode) bool {
	if len(list.Nodes) == 0 {
		return false
	}
	a, ok := list.Nodes[0].(*parse.ActionNode)
	if !ok || len(a.Pipe.Cmds) != 1 || len(a.Pipe.Cmds[0].Args) == 0 {
		return false
	}
	id, ok := a.Pipe.Cmds[0].Args[0].(*parse.IdentifierNode)
	return ok && id.Ident == tickFunc
}

// needsEmit reports whether the value an action prints could be a
// container: anything but a constant or a call of a scalar function.
func needsEmit(p *parse.PipeNode, scalar map[string]bool) bool {
	if len(p.Cmds) == 0 {
		return false
	}
	last := p.Cmds[len(p.Cmds)-1]
	if len(last.Args) == 0 {
		return false
	}
	switch a := last.Args[0].(type) {
	case *parse.IdentifierNode:
		return !scalar[a.Ident]
	case *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.NilNode:
		return false
	}
	return true
}

// scalarFuncs returns the names of funcs whose first result is a string,
// a number or a boolean, and the builtins of text/template that are.
func scalarFuncs(funcs template.FuncMap) map[string]bool {
	out := map[string]bool{"not": true, "len": true, "eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true}
	for name, fn := range funcs {
		t := reflect.TypeOf(fn)
		if t == nil || t.Kind() != reflect.Func || t.NumOut() == 0 {
			continue
		}
		switch t.Out(0).Kind() {
		case reflect.String, reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			out[name] = true
		}
	}
	return out
}

// guardNew guards the trees of t that are not trees of parent: those a tpl
// string just defined. The parent's trees are guarded already and shared.
func guardNew(t, parent *template.Template, scalar map[string]bool) {
	for _, tt := range t.Templates() {
		if p := parent.Lookup(tt.Name()); p != nil && p.Tree == tt.Tree {
			continue
		}
		guardTree(tt.Tree, scalar)
	}
}
