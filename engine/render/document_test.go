package render

import (
	"errors"
	"reflect"
	"testing"
)

// TestDocument: one file of the set renders over the object's dot as a
// single mapping; nothing is nil; anything else is an *Error naming the
// file, at the failing line.
func TestDocument(t *testing.T) {
	set, err := ParseSource(Source{Files: []SourceFile{
		{Name: "_h.tpl", Text: `{{ define "n" }}{{ .Spec.size }}{{ end }}`},
		{Name: "ok.yaml", Text: "spec:\n  replicas: {{ include \"n\" . }}\n  name: {{ .Name }}\n"},
		{Name: "empty.yaml", Text: "# nothing\n"},
		{Name: "two.yaml", Text: "a: 1\n---\nb: 2\n"},
		{Name: "list.yaml", Text: "- a\n"},
		{Name: "fail.yaml", Text: "a: 1\n{{ fail \"no\" }}\n"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"metadata": map[string]any{"name": "m"}, "spec": map[string]any{"size": int64(3)}}
	got, err := set.Document(t.Context(), Input{Object: obj}, "ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"spec": map[string]any{"replicas": int64(3), "name": "m"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, err := set.Document(t.Context(), Input{Object: obj}, "empty.yaml"); err != nil || got != nil {
		t.Errorf("empty: got %v, %v, want nil, nil", got, err)
	}
	for file, line := range map[string]int{"two.yaml": 0, "list.yaml": 0, "fail.yaml": 2, "missing.yaml": 0} {
		_, err := set.Document(t.Context(), Input{Object: obj}, file)
		re, ok := errors.AsType[*Error](err)
		if !ok || re.Template != file || re.Line != line {
			t.Errorf("%s: err = %v, want an *Error at %s:%d", file, err, file, line)
		}
	}
}
