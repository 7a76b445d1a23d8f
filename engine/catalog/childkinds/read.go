package childkinds

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/template/parse"

	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

// Kind is a kind the child templates of a folder render.
type Kind struct {
	APIVersion string
	Kind       string
	// Where is the first place it was found: the file and line of its
	// kind: line (kind.yaml, without a line, for the kinds it declares).
	Where Place
}

// Place is a line of a file of the folder.
type Place struct {
	File string
	Line int // 1-based; 0 when unknown
}

func (p Place) String() string {
	if p.Line > 0 {
		return p.File + ":" + strconv.Itoa(p.Line)
	}
	return p.File
}

// known reports whether p is a place: the zero Place is none.
func (p Place) known() bool { return p.File != "" }

// before orders places by file, then line.
func (p Place) before(o Place) bool {
	if p.File != o.File {
		return p.File < o.File
	}
	return p.Line < o.Line
}

// Unknown is a manifest whose kind cannot be read from the templates' text.
type Unknown struct {
	Where  Place
	Reason string
}

func (u Unknown) String() string { return u.Where.String() + ": " + u.Reason }

// Read reads, without rendering, the kinds that the child
// templates of set can render. It walks every child template's parse tree
// through every branch of if, with and range (a range body as often as it
// may run), into the helpers that include and template call by a literal
// name, splits the text that can come out at `---` lines as the render
// does, and reads each document's top-level apiVersion: and kind: lines.
//
// children are the (apiVersion, kind) pairs whose two lines are literal
// text (quoted or not, or a literal string action such as {{ "Service" }}).
// unknown lists the documents whose apiVersion or kind comes from a
// template action ({{ .Spec.kind }}, a variable, tpl, toYaml...) or that
// have content but no such lines: which kinds they render is not known
// before they are rendered.
//
// With never set (a chart), a document is also skipped when its
// metadata.annotations hold a literal helm.sh/hook line whose value never
// says true: it is never applied (a test hook), and needs no rights.
func Read(set *render.Set, never NeverApplied) (children []Kind, unknown []Unknown, err error) {
	trees := set.Trees()
	a := &analysis{trees: trees, found: map[[2]string]Place{}, unknown: map[Unknown]bool{}, inlining: map[string]bool{}, places: map[position]Place{}, never: never, linesVars: map[string]bool{}}
	for _, file := range set.ChildTemplates() {
		t := trees[file]
		if t == nil {
			continue
		}
		out := a.list(t, t.Root, stateSet{state{}: {}}, nil)
		for s := range out {
			a.endLine(&s)
			a.endDocument(&s)
		}
		if a.steps > maxSteps {
			return nil, nil, fmt.Errorf("%s: too many branches to follow statically; declare the kinds it renders in %s children", file, layout.KindFile)
		}
	}
	for k, where := range a.found {
		children = append(children, Kind{APIVersion: k[0], Kind: k[1], Where: where})
	}
	sort.Slice(children, func(i, j int) bool {
		if children[i].APIVersion != children[j].APIVersion {
			return children[i].APIVersion < children[j].APIVersion
		}
		return children[i].Kind < children[j].Kind
	})
	for u := range a.unknown {
		unknown = append(unknown, u)
	}
	sort.Slice(unknown, func(i, j int) bool {
		if a, b := unknown[i].Where, unknown[j].Where; a != b {
			return a.before(b)
		}
		return unknown[i].Reason < unknown[j].Reason
	})
	return children, unknown, nil
}

// NeverApplied reports whether a manifest whose helm.sh/hook annotation
// reads events is never applied (chart.NeverApplied); nil where the
// annotation means nothing, in a folder of templates.
type NeverApplied func(events string) bool

// hole stands in the text of a line for output no one can know before the
// render: a value printed by an action.
const hole = "\x00"

// maxLine is how much of a line is kept: enough for any apiVersion or kind.
const maxLine = 512

// maxSteps bounds the work of the analysis of one folder (text and action
// nodes visited, counted once per path state).
const maxSteps = 200_000

// field is an apiVersion or kind of the current document.
type field struct {
	value  string // the literal value; "" when absent or computed
	where  Place  // its line
	action string // the action it comes from, when computed
	empty  bool   // the key is there with no value on its line
}

func (f field) present() bool { return f.where.known() }

// state is where one path through the templates is: the current line of
// output so far, and what the current document holds. It is a comparable
// value: paths that reach the same state are followed once.
type state struct {
	line       string // text of the line so far, holes as hole; at most maxLine bytes
	lineAt     Place  // the line's first non-blank output
	lineHole   string // the first action printed in the line, e.g. {{.Spec.kind}}
	holeAt     Place  // that action
	lineLines  bool   // an action in the line may print lines of its own (only with analysis.never set)
	content    Place  // the document's first content; none while blank
	trimming   bool   // in an include piped to trim, before its first non-blank output
	apiVersion field
	kind       field
	meta       metaState // only with analysis.never set
}

type stateSet map[state]struct{}

func (s stateSet) add(o stateSet) {
	for k := range o {
		s[k] = struct{}{}
	}
}

// loop collects the paths that leave a range body early.
type loop struct {
	breaks, continues stateSet
}

type analysis struct {
	trees    map[string]*parse.Tree
	found    map[[2]string]Place // (apiVersion, kind) -> first place
	unknown  map[Unknown]bool
	inlining map[string]bool // helpers being walked, against recursion
	places   map[position]Place
	steps    int
	never    NeverApplied
	// linesVars are the variables set by a pipeline that printsLines.
	linesVars map[string]bool
}

// list follows every path through the nodes of list from each state of in
// and returns the states at its end. l is the innermost enclosing range of
// the same tree, for break and continue.
func (a *analysis) list(t *parse.Tree, list *parse.ListNode, in stateSet, l *loop) stateSet {
	if list == nil {
		return in
	}
	cur := in
	for _, n := range list.Nodes {
		if len(cur) == 0 || a.steps > maxSteps {
			return stateSet{}
		}
		cur = a.node(t, n, cur, l)
	}
	return cur
}

func (a *analysis) node(t *parse.Tree, n parse.Node, in stateSet, l *loop) stateSet {
	switch n := n.(type) {
	case *parse.TextNode:
		return a.each(in, func(s *state) { a.text(s, t, n.Pos, string(n.Text)) })
	case *parse.ActionNode:
		return a.action(t, n, in)
	case *parse.TemplateNode:
		// Only in trees that were not guarded; guarded ones hold includes.
		return a.include(t, n.Name, n.Pos, n.String(), "", 0, in)
	case *parse.IfNode:
		return a.branches(t, &n.BranchNode, in, l)
	case *parse.WithNode:
		return a.branches(t, &n.BranchNode, in, l)
	case *parse.RangeNode:
		return a.rangeNode(t, n, in, l)
	case *parse.BreakNode:
		if l != nil {
			l.breaks.add(in)
			return stateSet{}
		}
	case *parse.ContinueNode:
		if l != nil {
			l.continues.add(in)
			return stateSet{}
		}
	case *parse.ListNode:
		return a.list(t, n, in, l)
	}
	return in // comments and the like print nothing
}

// branches: either branch of an if or a with may run (no else: nothing).
func (a *analysis) branches(t *parse.Tree, n *parse.BranchNode, in stateSet, l *loop) stateSet {
	if a.never != nil {
		a.noteVars(n.Pipe)
	}
	out := a.list(t, n.List, in, l)
	if n.ElseList != nil {
		out.add(a.list(t, n.ElseList, in, l))
	} else {
		out.add(in)
	}
	return out
}

// rangeNode: the else branch when there is nothing to range over, or the
// body any number of times, each pass starting where the previous one (or
// a continue) ended, until no pass reaches a new state.
func (a *analysis) rangeNode(t *parse.Tree, n *parse.RangeNode, in stateSet, outer *loop) stateSet {
	if a.never != nil {
		a.noteVars(n.Pipe)
	}
	exit := stateSet{}
	if n.ElseList != nil {
		exit.add(a.list(t, n.ElseList, in, outer))
	} else {
		exit.add(in)
	}
	l := &loop{breaks: stateSet{}, continues: stateSet{}}
	seen := stateSet{}
	seen.add(in)
	frontier := in
	for len(frontier) > 0 && a.steps <= maxSteps {
		out := a.list(t, n.List, frontier, l)
		out.add(l.continues)
		l.continues = stateSet{}
		next := stateSet{}
		for s := range out {
			if _, ok := seen[s]; !ok {
				seen[s] = struct{}{}
				next[s] = struct{}{}
			}
		}
		exit.add(out)
		frontier = next
	}
	exit.add(l.breaks)
	return exit
}

func (a *analysis) each(in stateSet, f func(s *state)) stateSet {
	out := make(stateSet, len(in))
	for s := range in {
		a.steps++
		f(&s)
		out[s] = struct{}{}
	}
	return out
}

// silentFuncs print nothing (or stop the render).
var silentFuncs = map[string]bool{"requeueAfter": true, "fail": true}

// action follows one {{ ... }}.
func (a *analysis) action(t *parse.Tree, n *parse.ActionNode, in stateSet) stateSet {
	p := n.Pipe
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) == 0 {
		if a.never != nil {
			a.noteVars(p)
		}
		return in // {{ $x := ... }} and {{ $x = ... }} print nothing
	}
	first := p.Cmds[0]
	if str, ok := first.Args[0].(*parse.StringNode); ok && len(p.Cmds) == 1 && len(first.Args) == 1 {
		// {{ "Service" }}
		return a.each(in, func(s *state) { a.text(s, t, n.Pos, str.Text) })
	}
	id, _ := first.Args[0].(*parse.IdentifierNode)
	if id != nil && silentFuncs[id.Ident] && len(p.Cmds) == 1 {
		return in // {{ requeueAfter $wait }}
	}
	if id != nil && len(first.Args) >= 2 && id.Ident == "include" {
		// {{ template "x" . }} is an include too in a guarded tree.
		if name, ok := first.Args[1].(*parse.StringNode); ok {
			if mode, indent, ok := transform(p.Cmds[1:]); ok {
				return a.include(t, name.Text, n.Pos, n.String(), mode, indent, in)
			}
		}
	}
	if indent := nindented(p); indent > 0 {
		// Its lines all start with indent blanks: a block at that indent.
		return a.each(in, func(s *state) {
			a.text(s, t, n.Pos, "\n"+strings.Repeat(" ", indent))
			a.holeAt(s, t, n.Pos, n.String(), false)
		})
	}
	lines := a.never != nil && a.printsLines(p)
	return a.each(in, func(s *state) { a.holeAt(s, t, n.Pos, n.String(), lines) })
}

// nindented is N when the pipeline ends in nindent N, else 0.
func nindented(p *parse.PipeNode) int {
	last := p.Cmds[len(p.Cmds)-1]
	if id, ok := last.Args[0].(*parse.IdentifierNode); !ok || id.Ident != "nindent" || len(last.Args) != 2 {
		return 0
	}
	if num, ok := last.Args[1].(*parse.NumberNode); ok && num.IsInt && num.Int64 > 0 && num.Int64 < maxLine {
		return int(num.Int64)
	}
	return 0
}

// transform recognises what a pipeline does to an include's output when
// the lines keep their place: nothing, trim, or indent/nindent N.
func transform(cmds []*parse.CommandNode) (mode string, indent int, ok bool) {
	for _, c := range cmds {
		id, isID := c.Args[0].(*parse.IdentifierNode)
		if !isID {
			return "", 0, false
		}
		switch {
		case id.Ident == "trim" && len(c.Args) == 1 && mode == "":
			mode = "trim"
		case (id.Ident == "indent" || id.Ident == "nindent") && len(c.Args) == 2 && mode == "":
			num, isNum := c.Args[1].(*parse.NumberNode)
			if !isNum || !num.IsInt || num.Int64 < 0 {
				return "", 0, false
			}
			mode, indent = id.Ident, int(num.Int64)
		default:
			return "", 0, false
		}
	}
	return mode, indent, true
}

// include follows the helper name as if its text were where the call is.
// Indented by indent or nindent N > 0 its lines are no top-level keys: it is
// then content that cannot hold an apiVersion or a kind.
func (a *analysis) include(t *parse.Tree, name string, pos parse.Pos, text, mode string, indent int, in stateSet) stateSet {
	if mode == "nindent" {
		in = a.each(in, func(s *state) { a.text(s, t, pos, "\n") })
	}
	helper := a.trees[name]
	if helper == nil || a.inlining[name] || indent > 0 {
		// Its first line is indented as the pipeline says: the
		// annotations that come after it are still in its block. Indented,
		// its lines are all there; else they may be anywhere.
		lines := a.never != nil && indent == 0
		return a.each(in, func(s *state) {
			a.text(s, t, pos, strings.Repeat(" ", indent))
			a.holeAt(s, t, pos, text, lines)
		})
	}
	a.inlining[name] = true
	defer delete(a.inlining, name)
	if mode != "trim" {
		return a.list(helper, helper.Root, in, nil)
	}
	// Leading blanks go; trailing ones end the line a little early, which
	// changes no apiVersion or kind.
	in = a.each(in, func(s *state) { s.trimming = true })
	out := a.list(helper, helper.Root, in, nil)
	return a.each(out, func(s *state) { s.trimming = false })
}

type position struct {
	tree *parse.Tree
	pos  parse.Pos
}

// where is the place of pos in t: its file, and the line text/template
// counts (ErrorContext's "file:line:column", the one way the parse tree
// tells a node's line).
func (a *analysis) where(t *parse.Tree, pos parse.Pos) Place {
	key := position{t, pos}
	if p, ok := a.places[key]; ok {
		return p
	}
	loc, _ := t.ErrorContext(&parse.TextNode{NodeType: parse.NodeText, Pos: pos})
	p := Place{File: t.ParseName}
	if rest, ok := strings.CutPrefix(loc, t.ParseName+":"); ok {
		line, _, _ := strings.Cut(rest, ":")
		p.Line, _ = strconv.Atoi(line)
	}
	a.places[key] = p
	return p
}

// text adds literal output that starts at pos of t to s.
func (a *analysis) text(s *state, t *parse.Tree, pos parse.Pos, text string) {
	if s.trimming {
		rest := strings.TrimLeft(text, " \t\r\n")
		pos += parse.Pos(len(text) - len(rest))
		text = rest
		s.trimming = text == ""
	}
	for text != "" {
		i := strings.IndexByte(text, '\n')
		piece := text
		if i >= 0 {
			piece = text[:i]
		}
		if !s.lineAt.known() {
			if j := strings.IndexFunc(piece, notSpace); j >= 0 {
				s.lineAt = a.where(t, pos+parse.Pos(j))
			}
		}
		s.line = clip(s.line + piece)
		a.settle(s)
		if i < 0 {
			return
		}
		a.endLine(s)
		text = text[i+1:]
		pos += parse.Pos(i + 1)
	}
}

func notSpace(r rune) bool { return r != ' ' && r != '\t' && r != '\r' }

func clip(line string) string {
	if len(line) > maxLine {
		return line[:maxLine]
	}
	return line
}

// holeAt adds the output of an action that cannot be known to s.
func (a *analysis) holeAt(s *state, t *parse.Tree, pos parse.Pos, text string, lines bool) {
	s.trimming = false
	s.lineLines = s.lineLines || lines
	w := a.where(t, pos)
	if !s.lineAt.known() {
		s.lineAt = w
	}
	if s.lineHole == "" {
		s.lineHole, s.holeAt = text, w
	}
	s.line = clip(s.line + hole)
	a.settle(s)
}

// Lines that can be neither a separator nor a top-level apiVersion or kind
// are kept as one of these, whatever their text: paths that differ only in
// such text (a label printed or not) are then one state, not two.
const (
	otherLine   = "\x01" // content
	commentLine = "#"
	spaceLine   = " " // only blanks so far: the next text is not at column 0
)

var relevantPrefixes = []string{"---", "apiVersion", "kind", `"apiVersion"`, `'apiVersion'`, `"kind"`, `'kind'`}

// settle folds the line of s when what follows cannot make it relevant.
func (a *analysis) settle(s *state) {
	l := s.line
	if a.never != nil && a.settleMeta(s) {
		return
	}
	switch {
	case l == "" || l == otherLine || l == commentLine || l == spaceLine:
		return
	case strings.TrimLeft(l, " \t\r") == "":
		s.line = spaceLine
		return
	case strings.TrimLeft(l, " \t\r")[0] == '#':
		s.line, s.lineAt = commentLine, Place{}
	case l[0] == ' ' || l[0] == '\t' || l[0] == '\r':
		s.line = otherLine
	default:
		for _, p := range relevantPrefixes {
			if strings.HasPrefix(l, p) || strings.HasPrefix(p, l) {
				return
			}
		}
		s.line = otherLine
	}
	s.lineHole, s.holeAt = "", Place{}
}

// endLine reads the line of s as the render's document splitter and the
// YAML decoder would, and starts a new one.
func (a *analysis) endLine(s *state) {
	line, at, act, actAt, lines := s.line, s.lineAt, s.lineHole, s.holeAt, s.lineLines
	s.line, s.lineAt, s.lineHole, s.holeAt, s.lineLines = "", Place{}, "", Place{}, false
	if rest, ok := separator(line); ok {
		a.endDocument(s)
		if rest != "" {
			// "--- kind: X": the content belongs to the new document.
			s.line, s.lineAt, s.lineHole, s.holeAt, s.lineLines = rest, at, act, actAt, lines
			a.endLine(s)
		}
		return
	}
	trimmed := strings.TrimSpace(line)
	if trimmed == "" || trimmed[0] == '#' {
		if a.never != nil && lines {
			// What an action prints in a comment goes on past it.
			s.meta.spoiled = s.meta.spoiled || s.meta.hook || s.meta.in
		}
		return
	}
	if !s.content.known() {
		s.content = at
	}
	if a.never != nil {
		trackMeta(&s.meta, line, lines)
	}
	key, value, ok := topLevelKey(line)
	if !ok {
		return
	}
	f := field{where: at}
	switch v, literal := scalar(value); {
	case v == "" && !literal && !strings.Contains(value, hole):
		f.empty = true
	case !literal:
		f.action = act
		if f.action == "" {
			f.action = strings.TrimSpace(value)
		}
		f.where = actAt
		if !f.where.known() {
			f.where = at
		}
	default:
		f.value = v
	}
	if key == "apiVersion" {
		s.apiVersion = f
	} else {
		s.kind = f
	}
}

// mapKey matches `key: value` (the key possibly quoted) and returns the
// rest of the line.
func mapKey(line, key string) (value string, ok bool) {
	for _, form := range []string{key, `"` + key + `"`, `'` + key + `'`} {
		rest, found := strings.CutPrefix(line, form)
		if !found {
			continue
		}
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" || rest[0] != ':' {
			continue
		}
		rest = rest[1:]
		if rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\r' {
			continue // "kind:x" is not a key in YAML
		}
		return rest, true
	}
	return "", false
}

// endDocument records what the document of s renders, and starts a new one.
func (a *analysis) endDocument(s *state) {
	av, k, content, meta := s.apiVersion, s.kind, s.content, s.meta
	s.apiVersion, s.kind, s.content, s.meta = field{}, field{}, Place{}, metaState{}
	switch {
	case !content.known():
		// Blank or comments only: the render skips it.
	case a.never != nil && meta.neverApplied(a.never):
		// A test hook: never applied.
	case k.action != "":
		a.unknown[Unknown{Where: k.where, Reason: fmt.Sprintf("the kind comes from %s", k.action)}] = true
	case av.action != "":
		a.unknown[Unknown{Where: av.where, Reason: fmt.Sprintf("the apiVersion comes from %s", av.action)}] = true
	case k.value != "" && av.value != "":
		key := [2]string{av.value, k.value}
		if w, ok := a.found[key]; !ok || k.where.before(w) {
			a.found[key] = k.where
		}
	case !k.present():
		a.unknown[Unknown{Where: content, Reason: "no literal kind: line in this manifest"}] = true
	case k.empty:
		a.unknown[Unknown{Where: k.where, Reason: "the kind: line has no value"}] = true
	case !av.present():
		a.unknown[Unknown{Where: k.where, Reason: fmt.Sprintf("no literal apiVersion: line in the manifest of kind %s", k.value)}] = true
	default:
		a.unknown[Unknown{Where: av.where, Reason: "the apiVersion: line has no value"}] = true
	}
}

// separator is render's document separator rule (render.Separator): a
// line "---", or "--- " followed by content (returned) or a comment.
func separator(line string) (rest string, ok bool) {
	restAt, ok := render.Separator([]byte(line))
	if !ok || restAt < 0 {
		return "", ok
	}
	return strings.TrimRight(line, " \t\r")[restAt:], true
}

// topLevelKey matches `apiVersion: value` and `kind: value` at the start
// of a line (the key possibly quoted), and returns the rest of the line.
func topLevelKey(line string) (key, value string, ok bool) {
	for _, k := range []string{"apiVersion", "kind"} {
		if rest, ok := mapKey(line, k); ok {
			return k, rest, true
		}
	}
	return "", "", false
}

// scalar reads a YAML scalar as a manifest's apiVersion or kind: plain or
// quoted, with an optional comment after it. literal is false when the
// value holds a hole, or is not a plain scalar (a flow mapping, an anchor...).
func scalar(value string) (v string, literal bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return "", false
	}
	if strings.Contains(value, hole) {
		return "", false
	}
	switch value[0] {
	case '"':
		end := closingDoubleQuote(value)
		if end < 0 || !onlyComment(value[end+1:]) {
			return "", false
		}
		s, err := strconv.Unquote(value[:end+1])
		if err != nil {
			return "", false
		}
		return s, s != ""
	case '\'':
		var b strings.Builder
		for i := 1; i < len(value); i++ {
			if value[i] != '\'' {
				b.WriteByte(value[i])
				continue
			}
			if i+1 < len(value) && value[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			if !onlyComment(value[i+1:]) {
				return "", false
			}
			return b.String(), b.Len() > 0
		}
		return "", false
	case '{', '[', '&', '*', '!', '|', '>', '%', '@', '`':
		return "", false
	}
	if i := strings.Index(value, " #"); i >= 0 {
		value = value[:i]
	}
	if i := strings.Index(value, "\t#"); i >= 0 {
		value = value[:i]
	}
	value = strings.TrimSpace(value)
	return value, value != ""
}

func closingDoubleQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

func onlyComment(s string) bool {
	s = strings.TrimSpace(s)
	return s == "" || s[0] == '#'
}
