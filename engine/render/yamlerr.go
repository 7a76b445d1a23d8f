package render

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// A YAML file of a folder (kind.yaml, crd.yaml) or of lint's input that
// does not decode is an *Error at the line of the file it is about, made
// here, where it is decoded, once: no caller reads a line back out of a
// message.
//
// The YAML parser (go.yaml.in/yaml/v2, under sigs.k8s.io/yaml) tells where
// a document is malformed only in its message, "yaml: line 4: did not find
// expected key": syntaxLine reads it there, the one place the engine reads
// an error's text, and moves it to Line. Everything else a decoder refuses
// is located in the document's node tree (go.yaml.in/yaml/v3 keeps the
// line of every node): a duplicate key (yaml.v2's TypeError), a value of
// the wrong type (encoding/json's UnmarshalTypeError, by its field path),
// an unknown field (found by walking the tree against the type decoded
// into, keys in the order encoding/json meets them).

// DecodeYAML decodes data, the YAML text of file, into v strictly
// (sigs.k8s.io/yaml.UnmarshalStrict: an unknown or duplicate field is an
// error), and returns what it refuses as YAMLError does, with code.
func DecodeYAML(file string, data []byte, v any, code string) error {
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		return YAMLError(file, 1, data, v, code, err)
	}
	return nil
}

// YAMLError is err, which sigs.k8s.io/yaml returned for data (the text of
// file from its line first: 1 for a whole file) decoded into into (nil for
// a value of any type), as an *Error about file, with code, at the line of
// file it is about (0 when no line is known). The message is err's, less
// the parser's "yaml: line N:", which Line now says.
func YAMLError(file string, first int, data []byte, into any, code string, err error) *Error {
	e := &Error{Template: file, Code: code, Message: err.Error(), err: err}
	line := decodeErrorLine(data, into, err)
	if line == 0 {
		line, e.Message = syntaxLine(e.Message)
	}
	if line > 0 {
		e.Line = first + line - 1
	}
	return e
}

// FieldError is a mistake about the field at Path of a YAML file (its
// keys, as YAMLPathLine reads them), found by code that holds the decoded
// value, not the text: AtField locates it in the text. Its message is
// Err's.
type FieldError struct {
	Path []string
	Err  error
}

func (e *FieldError) Error() string { return e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Field is err as a mistake about the field at path.
func Field(err error, path ...string) error { return &FieldError{Path: path, Err: err} }

// AtField is err as the mistake of file, whose text is data, with code:
// at the line of the field a *FieldError in err names, else at no line.
func AtField(file string, data []byte, code string, err error) *Error {
	line := 0
	if fe, ok := errors.AsType[*FieldError](err); ok {
		line = YAMLPathLine(data, fe.Path...)
	}
	return At(file, line, code, err)
}

// YAMLPathLine is the line of data, YAML, where the field at path is: its
// keys, each maybe followed by [] for a list's items (the first that has
// the rest of the path) or [i] for one ("lookups[1]", "selector"). When
// data has no such field, the line of the deepest one of the path it has
// (a mistake about a value a schema's type string describes, such as a
// map's, is at the field); 0 when it has none, or does not parse.
func YAMLPathLine(data []byte, path ...string) int {
	root := yamlTree(data)
	if root == nil {
		return 0
	}
	segs := pathSegs(path)
	for n := len(segs); n > 0; n-- {
		if at := pathNodes(root, segs[:n], false); len(at) > 0 {
			return at[0].line
		}
		if last := segs[n-1]; last.item { // the list, without the item it lacks
			prefix := append(slices.Clone(segs[:n-1]), pathSeg{key: last.key})
			if at := pathNodes(root, prefix, false); len(at) > 0 {
				return at[0].line
			}
		}
	}
	return 0
}

// syntaxLine splits the YAML parser's "yaml: line N: " out of msg: the
// line, and msg without it. 0 and msg when it names none.
func syntaxLine(msg string) (int, string) {
	const mark = "yaml: line "
	i := strings.Index(msg, mark)
	if i < 0 {
		return 0, msg
	}
	rest := msg[i+len(mark):]
	digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	n, err := strconv.Atoi(rest[:digits])
	if err != nil || !strings.HasPrefix(rest[digits:], ": ") {
		return 0, msg
	}
	return n, msg[:i] + rest[digits+2:]
}

// decodeErrorLine is the line of data that a decoding error that is no
// syntax error is about, found in its node tree; 0 when not found.
func decodeErrorLine(data []byte, into any, err error) int {
	root := yamlTree(data)
	if root == nil {
		return 0
	}
	if _, ok := errors.AsType[*yamlv2.TypeError](err); ok {
		// In strict mode, yaml.v2's only: a key given twice.
		if n := firstDuplicate(root); n != nil {
			return n.Line
		}
		return 0
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		want, _, _ := strings.Cut(te.Value, " ") // "number 1.5": the JSON kind first
		at := pathNodes(root, pathSegs(strings.Split(te.Field, ".")), true)
		for _, a := range at {
			if jsonKind(a.val) == want {
				return a.line
			}
		}
		if len(at) > 0 {
			return at[0].line
		}
		return 0
	}
	if into == nil {
		return 0
	}
	t := reflect.TypeOf(into)
	if t.Kind() != reflect.Pointer {
		return 0
	}
	// The strict decode failed for a field the type does not know only if
	// the lax one succeeds; else it failed for a value (a duration that
	// does not parse), whose place the error does not say.
	if yaml.Unmarshal(data, reflect.New(t.Elem()).Interface()) != nil {
		return 0
	}
	if n := firstUnknown(root, t); n != nil {
		return n.Line
	}
	return 0
}

// yamlTree is data's first document as a node tree; nil when it does not
// parse.
func yamlTree(data []byte) *yamlv3.Node {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) != nil || doc.Kind != yamlv3.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

// firstDuplicate is the first key of a mapping that holds it already, in
// document order, as yaml.v2's strict decoder meets them.
func firstDuplicate(n *yamlv3.Node) *yamlv3.Node {
	switch n.Kind {
	case yamlv3.MappingNode:
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if seen[k.Value] {
				return k
			}
			seen[k.Value] = true
			if d := firstDuplicate(n.Content[i+1]); d != nil {
				return d
			}
		}
	case yamlv3.SequenceNode:
		for _, c := range n.Content {
			if d := firstDuplicate(c); d != nil {
				return d
			}
		}
	}
	return nil
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// firstUnknown is the first key of n, read into a value of type t, that
// encoding/json's strict decoder refuses as an unknown field: in the order
// it meets them, that of the JSON sigs.k8s.io/yaml makes (a mapping's keys
// sorted), keys matched to fields as it matches them (exactly, else
// without case). A type that decodes itself (json.Unmarshaler) takes any.
func firstUnknown(n *yamlv3.Node, t reflect.Type) *yamlv3.Node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil
	}
	switch {
	case n.Kind == yamlv3.SequenceNode && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for _, c := range n.Content {
			if u := firstUnknown(c, t.Elem()); u != nil {
				return u
			}
		}
	case n.Kind == yamlv3.MappingNode && (t.Kind() == reflect.Map || t.Kind() == reflect.Struct):
		for _, i := range sortedKeys(n) {
			k, v := n.Content[i], n.Content[i+1]
			elem := t
			if t.Kind() == reflect.Map {
				elem = t.Elem()
			} else if f, ok := jsonField(t, k.Value); ok {
				elem = f
			} else {
				return k
			}
			if u := firstUnknown(v, elem); u != nil {
				return u
			}
		}
	}
	return nil
}

// sortedKeys are the indexes of n's keys in n.Content, by key.
func sortedKeys(n *yamlv3.Node) []int {
	var idx []int
	for i := 0; i+1 < len(n.Content); i += 2 {
		idx = append(idx, i)
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(n.Content[a].Value, n.Content[b].Value) })
	return idx
}

// jsonField is the type of the field of struct t that encoding/json
// decodes key into: by its name (the tag's, else the field's), exactly,
// else without case; the fields of embedded structs count as t's.
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	var folded reflect.Type
	var walk func(t reflect.Type) (reflect.Type, bool)
	walk = func(t reflect.Type) (reflect.Type, bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			ft := f.Type
			if f.Anonymous && name == "" {
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					if found, ok := walk(ft); ok {
						return found, true
					}
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			switch {
			case name == key:
				return f.Type, true
			case folded == nil && strings.EqualFold(name, key):
				folded = f.Type
			}
		}
		return nil, false
	}
	if found, ok := walk(t); ok {
		return found, true
	}
	return folded, folded != nil
}

// nodeAt is a node found at a path, and the line of its key.
type nodeAt struct {
	line int
	val  *yamlv3.Node
}

// pathSeg is one step of a path: a key, then maybe an item of its list
// (index -1: any).
type pathSeg struct {
	key   string
	item  bool
	index int
}

// pathSegs reads the keys of a path as YAMLPathLine's, each maybe
// followed by [] or [i].
func pathSegs(path []string) []pathSeg {
	var segs []pathSeg
	for _, part := range path {
		s := pathSeg{key: part}
		if open := strings.IndexByte(part, '['); open >= 0 && strings.HasSuffix(part, "]") {
			s.key, s.item, s.index = part[:open], true, -1
			if n, err := strconv.Atoi(part[open+1 : len(part)-1]); err == nil {
				s.index = n
			}
		}
		if s.key != "" || s.item {
			segs = append(segs, s)
		}
	}
	return segs
}

// pathNodes are the nodes at path under n, in document order. A list on
// the way stands for each of its items (an encoding/json path names no
// items). With embedded, a key no mapping has is skipped: encoding/json
// names the embedded structs a field is promoted from.
func pathNodes(n *yamlv3.Node, path []pathSeg, embedded bool) []nodeAt {
	return descend(nodeAt{line: n.Line, val: n}, path, embedded)
}

func descend(at nodeAt, path []pathSeg, embedded bool) []nodeAt {
	n := at.val
	if n.Kind == yamlv3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if len(path) == 0 {
		return []nodeAt{{line: at.line, val: n}}
	}
	s := path[0]
	switch n.Kind {
	case yamlv3.SequenceNode:
		var out []nodeAt
		for _, c := range n.Content {
			out = append(out, descend(nodeAt{line: c.Line, val: c}, path, embedded)...)
		}
		return out
	case yamlv3.MappingNode:
		k, v := mappingValue(n, s.key)
		if v == nil {
			if !embedded || s.item {
				return nil
			}
			return descend(at, path[1:], embedded) // an embedded struct's name
		}
		next := nodeAt{line: k.Line, val: v}
		if !s.item {
			return descend(next, path[1:], embedded)
		}
		if v.Kind == yamlv3.MappingNode && s.index < 0 {
			// A mapping that describes the items (the short schema's
			// `ports: {_: "[]object", port: ...}`).
			return descend(next, path[1:], embedded)
		}
		if v.Kind != yamlv3.SequenceNode {
			return nil
		}
		var out []nodeAt
		for i, c := range v.Content {
			if s.index < 0 || s.index == i {
				out = append(out, descend(nodeAt{line: c.Line, val: c}, path[1:], embedded)...)
			}
		}
		return out
	}
	return nil
}

// mappingValue is the key of mapping n named key and its value: exactly,
// else without case, as encoding/json matches; nil when there is none.
func mappingValue(n *yamlv3.Node, key string) (k, v *yamlv3.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if strings.EqualFold(n.Content[i].Value, key) {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// jsonKind is the kind of JSON value encoding/json's UnmarshalTypeError
// names for n: number, string, bool, array or object.
func jsonKind(n *yamlv3.Node) string {
	switch n.Kind {
	case yamlv3.SequenceNode:
		return "array"
	case yamlv3.MappingNode:
		return "object"
	case yamlv3.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float":
			return "number"
		case "!!bool":
			return "bool"
		case "!!null":
			return "null"
		}
		return "string"
	}
	return ""
}
