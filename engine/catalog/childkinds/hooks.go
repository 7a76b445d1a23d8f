package childkinds

import (
	"strings"
	"text/template/parse"

	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/render"
)

// A chart's document is left out of its kind's rights only when its text
// alone says what YAML will read as its metadata.annotations' helm.sh/hook:
// a literal string that chart.NeverApplied refuses, under the document's
// only metadata: and only annotations: keys, with nothing after it that
// could print or hide another. The reader below follows the document's
// top-level lines and its metadata's lines, whole, and gives up (spoils the
// document, which then counts) on YAML it does not follow.
//
// What an action prints is taken to be a value in its place (a name, an
// image), a block at N blanks when it ends in nindent N, or else, when it
// may print lines of its own (printsLines: toYaml, tpl, an include not
// followed), anything: after the hook, or before it in the metadata, such
// output spoils the document. What a custom resource's author puts in a
// string (a newline, a quote) is outside this reading: at worst, a child
// the engine then applies is refused for want of rights, with an error on
// the object, never applied with rights it was not meant to have.

// metaState is where a document's lines are in its metadata. Indents are
// counted plus one: 0 is unknown.
type metaState struct {
	in         bool // under a top-level metadata: key
	seen       bool // the document had a metadata: key
	keyIndent  int  // of metadata's keys
	scalarAt   int  // of the key whose block scalar (| or >) the lines below are
	annSeen    bool // the metadata had an annotations: key
	annIndent  int  // of its annotations: key, while in its block
	annKeys    int  // of the annotations' keys
	hook       bool // a helm.sh/hook line among them
	hookEvents string
	hookKnown  bool // its value is a literal string
	spoiled    bool // text after which the hook is no longer known
}

// neverApplied: the document holds a hook that never says it is not
// applied.
func (m metaState) neverApplied(never NeverApplied) bool {
	return m.hook && m.hookKnown && !m.spoiled && never(m.hookEvents)
}

// settleMeta keeps whole the lines the hook is read from: top-level lines,
// and the lines of the metadata. It reports whether it settled the line.
func (a *analysis) settleMeta(s *state) bool {
	l := s.line
	if l == "" || l == otherLine || l == commentLine || l == spaceLine {
		return false
	}
	if l[0] != ' ' {
		return true
	}
	if !s.meta.in {
		return false
	}
	if rest := strings.TrimLeft(l, " "); rest != "" && (rest[0] == '#' || rest[0] == '\t') {
		s.line, s.lineAt = commentLine, Place{}
		s.lineHole, s.holeAt = "", Place{}
	}
	return true
}

// trackMeta follows a document's non-blank line. lines: an action in it
// may print lines of its own.
func trackMeta(m *metaState, line string, lines bool) {
	if lines && (m.hook || m.in) {
		// They may hold another hook or metadata; or a top-level key
		// that takes in the metadata's lines below.
		m.spoiled = true
	}
	defer func() { m.spoiled = m.spoiled || (lines && m.in) }()
	if strings.HasPrefix(line, otherLine) {
		return // an indented line settle folded, outside the metadata
	}
	rest := strings.TrimRight(strings.TrimLeft(line, " "), " \t\r")
	indent := len(line) - len(strings.TrimLeft(line, " ")) + 1
	if indent == 1 {
		l := readLine(rest)
		isMeta := !l.keyUnread && l.key == "metadata"
		switch {
		case l.unclosed:
			m.spoiled = true
		case l.keyUnread && m.hook:
			m.spoiled = true
		case isMeta && m.seen:
			m.spoiled = true // YAML keeps the last metadata: alone
		}
		// A top-level key ends the metadata; "metadata:" with no value
		// on its line (or one printed by an action, a block then) starts it.
		*m = metaState{in: isMeta && blockValue(l.value), seen: m.seen || isMeta,
			hook: m.hook, hookEvents: m.hookEvents, hookKnown: m.hookKnown, spoiled: m.spoiled}
		return
	}
	if !m.in {
		return
	}
	if m.scalarAt != 0 && indent > m.scalarAt {
		return // the text of a block scalar
	}
	m.scalarAt = 0
	if m.keyIndent == 0 {
		m.keyIndent = indent
	}
	if indent < m.keyIndent {
		m.in, m.spoiled = false, true // text less indented than the keys: not YAML we read
		return
	}
	if m.annIndent != 0 && indent <= m.annIndent {
		m.annIndent, m.annKeys = 0, 0
	}
	l := readLine(rest)
	if l.unclosed {
		m.spoiled = true // it may run over the lines below
	}
	if l.blockScalar {
		m.scalarAt = indent
	}
	switch {
	case indent == m.keyIndent:
		switch {
		case l.keyUnread:
			m.spoiled = m.spoiled || m.hook
		case l.key == "annotations":
			m.spoiled = m.spoiled || m.annSeen // YAML keeps the last
			m.annSeen = true
			if blockValue(l.value) {
				m.annIndent = indent
			}
		}
	case m.annIndent != 0:
		if m.annKeys == 0 {
			m.annKeys = indent
		}
		switch {
		case indent != m.annKeys:
			// inside an annotation's value
		case l.keyUnread:
			m.spoiled = m.spoiled || m.hook
		case l.key == chart.HookAnnotation:
			events, literal := scalar(l.value)
			if literal {
				// A plain 00, true or null is no string: YAML gives the
				// object no annotations a client reads.
				s, ok := yamlString(l.value)
				literal = ok && s == events
			}
			m.hook, m.hookEvents, m.hookKnown = true, events, literal
		}
	}
}

// metaLine is one line of a mapping as this reader sees it.
type metaLine struct {
	key         string // unquoted
	keyUnread   bool   // no key this reader can name: printed by an action, escaped, a merge (<<), complex, anchored or tagged, or a sequence item
	value       string // after the key's colon
	unclosed    bool   // a quoted scalar, a flow collection or a complex key that may go on past the line
	blockScalar bool   // the value is a | or > block
}

// readLine reads a whole line, its indent removed.
func readLine(rest string) metaLine {
	var l metaLine
	if rest == "" {
		return l
	}
	switch c := rest[0]; {
	case c == '-' && (len(rest) == 1 || rest[1] == ' '), c == '&' || c == '!':
		// A sequence item, an anchored or tagged key: no key this reader
		// names, but the text after may not close.
		after := ""
		if i := strings.IndexAny(rest, " \t"); i >= 0 {
			after = strings.TrimLeft(rest[i:], " \t")
		}
		inner := readLine(after)
		return metaLine{keyUnread: true, unclosed: inner.unclosed, blockScalar: inner.blockScalar}
	case c == '"' || c == '\'':
		end := closingQuote(rest)
		if end < 0 {
			return metaLine{keyUnread: true, unclosed: true}
		}
		l.key = rest[1:end]
		if c == '\'' {
			l.key = strings.ReplaceAll(l.key, "''", "'")
		}
		after := strings.TrimLeft(rest[end+1:], " \t")
		if after == "" || after[0] != ':' {
			// A scalar alone: not a key (the render fails on it).
			return metaLine{keyUnread: true}
		}
		l.value = after[1:]
		if c == '"' && strings.ContainsRune(l.key, '\\') {
			l.keyUnread = true // an escape: this reader does not decode them
		}
	case strings.ContainsRune("?:,[]{}#*|>%@`\t", rune(c)) || strings.HasPrefix(rest, "<<"):
		// Complex, alias or merge keys, flow collections.
		l.keyUnread = true
		l.unclosed = c == '?' || ((c == '[' || c == '{') && !valueCloses(rest))
		return l
	default:
		i := keyEnd(rest)
		if i < 0 {
			l.keyUnread = true // no key: text an action printed, or not YAML
			return l
		}
		l.key, l.value = strings.TrimRight(rest[:i], " \t"), rest[i+1:]
	}
	if strings.ContainsAny(l.key, hole) {
		l.keyUnread = true
	}
	v := strings.TrimLeft(l.value, " \t")
	l.unclosed = !valueCloses(v)
	l.blockScalar = v != "" && (v[0] == '|' || v[0] == '>')
	return l
}

// keyEnd is the index of the colon that ends a plain key: followed by a
// blank, the end of the line, or what an action prints.
func keyEnd(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' && i+1 < len(s) && s[i+1] == '#' {
			return -1 // a comment before any colon
		}
		if s[i] != ':' {
			continue
		}
		if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t' || s[i+1] == hole[0] {
			return i
		}
	}
	return -1
}

// valueCloses: the value text v (leading blanks removed) ends on its line.
func valueCloses(v string) bool {
	if v == "" {
		return true
	}
	switch v[0] {
	case '"', '\'':
		return closingQuote(v) >= 0
	case '[', '{':
		return flowCloses(v)
	case '&', '!':
		// An anchor or a tag, then the value.
		i := strings.IndexAny(v, " \t")
		if i < 0 {
			return true
		}
		return valueCloses(strings.TrimLeft(v[i:], " \t"))
	case '?':
		return false
	}
	return true
}

// closingQuote is the index of the quote that closes the scalar s starts
// with, or -1.
func closingQuote(s string) int {
	if s[0] == '"' {
		return closingDoubleQuote(s)
	}
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			i++
			continue
		}
		return i
	}
	return -1
}

// flowCloses: the flow collection s starts with ends on the line.
func flowCloses(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return true
			}
		case '"', '\'':
			end := closingQuote(s[i:])
			if end < 0 {
				return false
			}
			i += end
		case '#':
			if i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
				return false // a comment: the collection goes on below
			}
		}
	}
	return false
}

// yamlString is the value YAML decodes from the text after a key, when it
// is a string.
func yamlString(value string) (string, bool) {
	var doc map[string]any
	if err := yaml.Unmarshal([]byte("v: "+value), &doc); err != nil {
		return "", false
	}
	s, ok := doc["v"].(string)
	return s, ok
}

// blockValue: nothing after the key but a comment, or only what an action
// prints (a block that starts on the next line, in valid YAML).
func blockValue(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || v[0] == '#' || strings.Trim(v, hole+" ") == ""
}

// printsLines: the pipeline may print more than one line, from data that
// has none: a function that does (render.PrintsLines), a printf whose format is not a
// literal without %c, a literal string with a newline, a chart's .Files,
// a bare {{ . }} (which with may have set to such output), or a variable
// that such a pipeline set.
func (a *analysis) printsLines(p *parse.PipeNode) bool {
	if p == nil {
		return false
	}
	for _, c := range p.Cmds {
		if a.commandPrintsLines(c) {
			return true
		}
	}
	return false
}

// noteVars records the variables a pipeline that printsLines declares.
// Scopes are not followed: a name once set so is taken so everywhere.
func (a *analysis) noteVars(p *parse.PipeNode) {
	if p == nil || len(p.Decl) == 0 || !a.printsLines(p) {
		return
	}
	for _, v := range p.Decl {
		a.linesVars[v.Ident[0]] = true
	}
}

func (a *analysis) commandPrintsLines(c *parse.CommandNode) bool {
	for i, arg := range c.Args {
		switch n := arg.(type) {
		case *parse.DotNode:
			if len(c.Args) == 1 {
				return true
			}
		case *parse.FieldNode:
			if n.Ident[0] == "Files" {
				return true
			}
		case *parse.VariableNode:
			if a.linesVars[n.Ident[0]] || (len(n.Ident) > 1 && n.Ident[0] == "$" && n.Ident[1] == "Files") {
				return true
			}
		case *parse.IdentifierNode:
			if render.PrintsLines(n.Ident) {
				return true
			}
			if i == 0 && n.Ident == "printf" {
				format, ok := c.Args[min(1, len(c.Args)-1)].(*parse.StringNode)
				if !ok || strings.Contains(format.Text, "%c") {
					return true
				}
			}
		case *parse.StringNode:
			if strings.ContainsAny(n.Text, "\n\r") {
				return true
			}
		case *parse.PipeNode:
			if a.printsLines(n) {
				return true
			}
		case *parse.ChainNode:
			if pipe, ok := n.Node.(*parse.PipeNode); ok && a.printsLines(pipe) {
				return true
			}
		}
	}
	return false
}
