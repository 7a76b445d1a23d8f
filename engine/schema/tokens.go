package schema

import (
	"fmt"
	"strings"
)

// token is one marker of a type line: `required`, `minimum=1`,
// `description="a b"`.
type token struct {
	key      string
	value    string
	hasValue bool
	// quoted: the value was written in double quotes. A quoted value is
	// always a string, so `default="3"` on an intOrString is the string "3".
	quoted bool
}

// tokenize splits the markers of a type line (what follows the `|`).
//
// Markers are separated by blanks. A value runs to the next blank, unless it
// is double-quoted (then `\"` is a quote, `\\` a backslash and any other
// backslash is kept, so that a pattern needs no doubling: pattern="^\d+$")
// or starts with [ or { (then it runs to the matching bracket, so that
// default=[1, 2] and default={"a": 1} hold blanks).
func tokenize(s string) ([]token, error) {
	var out []token
	i := 0
	for {
		for i < len(s) && isBlank(s[i]) {
			i++
		}
		if i == len(s) {
			return out, nil
		}
		start := i
		for i < len(s) && isKeyChar(s[i]) {
			i++
		}
		t := token{key: s[start:i]}
		if t.key == "" {
			return nil, fmt.Errorf("unexpected %q in the markers %q: a marker is a name, or name=value", s[i], s)
		}
		if i == len(s) || isBlank(s[i]) {
			out = append(out, t)
			continue
		}
		if s[i] != '=' {
			return nil, fmt.Errorf("unexpected %q after marker %q: a marker is a name, or name=value", s[i], t.key)
		}
		i++
		t.hasValue = true
		var err error
		switch {
		case i < len(s) && s[i] == '"':
			t.value, i, err = quoted(s, i)
			t.quoted = true
			if err == nil && i < len(s) && !isBlank(s[i]) {
				err = fmt.Errorf("marker %s: unexpected %q after the closing quote", t.key, s[i])
			}
		case i < len(s) && (s[i] == '[' || s[i] == '{'):
			t.value, i, err = bracketed(s, i)
			if err == nil && i < len(s) && !isBlank(s[i]) {
				err = fmt.Errorf("marker %s: unexpected %q after the closing %q", t.key, s[i], s[i-1])
			}
		default:
			start := i
			for i < len(s) && !isBlank(s[i]) {
				i++
			}
			t.value = s[start:i]
			if t.value == "" {
				err = fmt.Errorf("marker %s= has no value (an empty string is written %s=\"\")", t.key, t.key)
			}
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
}

// quoted reads the double-quoted string that starts at s[i] and returns its
// value and the index after the closing quote.
func quoted(s string, i int) (string, int, error) {
	var b strings.Builder
	for i++; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return b.String(), i + 1, nil
		case c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
			b.WriteByte(s[i+1])
			i++
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated quote in %q", s)
}

// bracketed reads the JSON-like value that starts with [ or { at s[i], to
// its matching bracket (brackets inside double quotes do not count).
func bracketed(s string, i int) (string, int, error) {
	start, depth, inString := i, 0, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
			if depth == 0 {
				return s[start : i+1], i + 1, nil
			}
		}
	}
	return "", 0, fmt.Errorf("unbalanced %q in %q", s[start], s)
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
