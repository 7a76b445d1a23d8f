package render

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Document is one YAML document of a stream: a template's output, a file
// of manifests or CRDs.
type Document struct {
	Line int    // 1-based line of the stream where it starts, for YAML errors
	Text []byte // without the separator line
}

// SplitDocuments splits a YAML stream on `---` lines, as Helm's manifest
// splitter does: the one rule of the engine, read the same by the render,
// the static analysis of child kinds and lint. Every `---` line starts a
// document, even one followed by content ("--- a: 1"), so that no content
// hides behind a separator: the YAML decoder reads one document and would
// silently drop the rest.
func SplitDocuments(out []byte) []Document {
	var docs []Document
	start, startLine := 0, 1
	for pos, line := 0, 1; pos < len(out); line++ {
		end := bytes.IndexByte(out[pos:], '\n')
		if end < 0 {
			end = len(out)
		} else {
			end += pos
		}
		if restAt, ok := Separator(out[pos:end]); ok {
			docs = append(docs, Document{Line: startLine, Text: out[start:pos]})
			start, startLine = end+1, line+1
			if restAt >= 0 {
				// Content after "--- " belongs to the next document.
				start, startLine = pos+restAt, line
			}
		}
		pos = end + 1
	}
	if start < len(out) {
		docs = append(docs, Document{Line: startLine, Text: out[start:]})
	}
	return docs
}

// Separator reports whether line is a document separator, and where the
// content that follows the `---` on it starts (-1 for none or a comment).
func Separator(line []byte) (restAt int, ok bool) {
	line = bytes.TrimRight(line, " \t\r")
	if !bytes.HasPrefix(line, []byte("---")) {
		return -1, false
	}
	if len(line) == 3 {
		return -1, true
	}
	if line[3] != ' ' && line[3] != '\t' {
		return -1, false // "----" or "---x" is content, not a separator
	}
	restAt = len(line) - len(bytes.TrimLeft(line[3:], " \t"))
	if line[restAt] == '#' {
		return -1, true
	}
	return restAt, true
}

// Blank reports whether a document has nothing but whitespace and comments.
func Blank(doc []byte) bool {
	for line := range bytes.Lines(doc) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return false
		}
	}
	return true
}

// appendManifests decodes the output of the child template file and appends
// its manifests to ms.
func appendManifests(ms []Manifest, file string, out []byte) ([]Manifest, error) {
	index := 0
	for _, doc := range SplitDocuments(out) {
		if Blank(doc.Text) {
			continue
		}
		v, err := decodeYAML(doc)
		if err != nil {
			return nil, documentError(file, index, true, "%v", err)
		}
		if v == nil {
			continue // "null" or "~": no object, like an empty document
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, documentError(file, index, true, "a manifest must be a YAML mapping, got %s", describe(v))
		}
		if msg := checkManifest(obj); msg != "" {
			return nil, documentError(file, index, false, "%s", msg)
		}
		ms = append(ms, Manifest{Template: file, Index: index, Object: &unstructured.Unstructured{Object: obj}})
		index++
	}
	return ms, nil
}

// DocumentError marks a rendered document that the engine cannot apply,
// found in the *Error's chain: NotYAML when it is not a YAML mapping, else
// an object that cannot be server-side applied (no apiVersion, kind or
// name; a List). lint reports the two apart by this mark.
type DocumentError struct {
	Index   int // the document's index among the file's non-empty ones
	NotYAML bool
}

func (e *DocumentError) Error() string {
	if e.NotYAML {
		return fmt.Sprintf("document %d is not a YAML mapping", e.Index)
	}
	return fmt.Sprintf("document %d cannot be applied", e.Index)
}

// documentError is a located error about document index of file.
func documentError(file string, index int, notYAML bool, format string, args ...any) *Error {
	return &Error{Template: file, Message: fmt.Sprintf("document %d: ", index) + fmt.Sprintf(format, args...),
		err: &DocumentError{Index: index, NotYAML: notYAML}}
}

// checkManifest returns why obj cannot be server-side applied, or "".
func checkManifest(obj map[string]any) string {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	switch {
	case apiVersion == "":
		return "apiVersion is required (a non-empty string)"
	case kind == "":
		return "kind is required (a non-empty string)"
	case kind == "List":
		// kubectl unpacks Lists; the API server has no List resource, and
		// a mapper asked for one would rediscover every group in vain.
		return "kind List is a list of objects, not an object: render each item as a document of its own (separated by ---)"
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return kind + ": metadata.name is required"
	}
	if name, _ := meta["name"].(string); name == "" {
		if _, ok := meta["generateName"]; ok {
			return kind + ": metadata.generateName is not supported, set metadata.name: server-side apply needs a name"
		}
		return kind + ": metadata.name is required (a non-empty string)"
	}
	for _, field := range []string{"labels", "annotations"} {
		if msg := stringMap(meta, field); msg != "" {
			return kind + " " + meta["name"].(string) + ": " + msg
		}
	}
	return ""
}

// stringMap checks that metadata's labels or annotations map names to
// strings, as the API server requires, and turns a null value into "", as
// the server stores it (and Helm, which sends it, ends with). An unquoted
// "8080" or "true" is refused here, naming the key, rather than at the
// server, after the children before it are applied; and the engine's own
// reading of labels and annotations (a Helm hook, an owner label) is
// then the server's.
func stringMap(meta map[string]any, field string) string {
	v, ok := meta[field]
	if !ok || v == nil {
		return ""
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Sprintf("metadata.%s must be a mapping of strings, got %s", field, describe(v))
	}
	for k, val := range m {
		switch val.(type) {
		case string:
		case nil:
			m[k] = ""
		case bool, int64, float64:
			return fmt.Sprintf("metadata.%s[%q] must be a string, got %s (%v): quote it", field, k, describe(val), val)
		default:
			return fmt.Sprintf("metadata.%s[%q] must be a string, got %s", field, k, describe(val))
		}
	}
	return ""
}

// decodeStatus decodes status.yaml's output: one mapping, or nothing.
func decodeStatus(out []byte) (map[string]any, error) { return decodeSingle(statusFile, out) }

// decodeSingle decodes the output of file that must be one mapping, or
// nothing: status.yaml's, a conversion's (Set.Document).
func decodeSingle(file string, out []byte) (map[string]any, error) {
	var found *Document
	for _, doc := range SplitDocuments(out) {
		if Blank(doc.Text) {
			continue
		}
		if found != nil {
			return nil, &Error{Template: file, Message: "must render a single YAML mapping, got several documents"}
		}
		found = &doc
	}
	if found == nil {
		return nil, nil
	}
	v, err := decodeYAML(*found)
	if err != nil {
		return nil, &Error{Template: file, Message: err.Error()}
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	default:
		return nil, &Error{Template: file, Message: "must render a YAML mapping, got " + describe(v)}
	}
}

// decodeYAML decodes a document as the API server returns objects (see
// decodeValue): whole numbers as int64, only JSON's types.
func decodeYAML(doc Document) (any, error) {
	v, err := decodeValue(doc.Text)
	if err != nil {
		if n, rest := syntaxLine(err.Error()); n > 0 {
			// The library counts from the document; the author reads the
			// rendered output, so report the line there.
			return nil, fmt.Errorf("invalid YAML at line %d of the output: %s", doc.Line+n-1, rest)
		}
		return nil, fmt.Errorf("invalid YAML: %v", err)
	}
	return v, nil
}

// describe names the YAML type of a decoded value for error messages.
func describe(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	case map[string]any:
		return "a mapping"
	default:
		return fmt.Sprintf("%T", v)
	}
}
