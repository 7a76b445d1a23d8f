package render

import (
	"strings"
	"testing"
	"text/template/parse"
)

func TestTrees(t *testing.T) {
	set, err := Parse(map[string]string{
		"_helpers.tpl": "{{- define \"labels\" -}}\napp: {{ .Name }}\n{{- end }}\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\n{{- range .Spec.items }}\n# {{ . }}\n{{- end }}\n" +
			"metadata:\n  name: x\n  labels:\n    {{ template \"labels\" . }}\ndata: {{ toJson .Spec }}\n",
		"status.yaml": "ready: true\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	trees := set.Trees()
	for _, name := range []string{"_helpers.tpl", "labels", "cm.yaml", "status.yaml"} {
		if trees[name] == nil {
			t.Errorf("no tree %q (got %v)", name, keys(trees))
		}
	}
	if _, ok := trees[rootName]; ok {
		t.Errorf("the set's empty root template is listed")
	}
	if got := trees["labels"].ParseName; got != "_helpers.tpl" {
		t.Errorf("define's ParseName = %q, want _helpers.tpl", got)
	}

	cm := trees["cm.yaml"]
	text := cm.Root.String()
	for _, guard := range []string{tickFunc, emitFunc} {
		if strings.Contains(text, guard) {
			t.Errorf("copy still calls %s:\n%s", guard, text)
		}
	}
	if !strings.Contains(text, `{{include "labels" `) {
		t.Errorf("template not shown as include:\n%s", text)
	}
	// Positions are the file's.
	var toJson *parse.ActionNode
	for _, n := range cm.Root.Nodes {
		if a, ok := n.(*parse.ActionNode); ok && strings.Contains(a.String(), "toJson") {
			toJson = a
		}
	}
	if toJson == nil {
		t.Fatalf("no toJson action in\n%s", text)
	}
	if loc, _ := cm.ErrorContext(toJson); !strings.HasPrefix(loc, "cm.yaml:10:") {
		t.Errorf("location %q, want cm.yaml:10:...", loc)
	}

	// The copies are the caller's: the set renders as before.
	cm.Root.Nodes = nil
	trees["labels"].Root.Nodes = nil
	res, err := set.Children(t.Context(), Input{Object: map[string]any{
		"apiVersion": "x/v1", "kind": "X", "metadata": map[string]any{"name": "obj"},
		"spec": map[string]any{"items": []any{"a"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifests) != 1 || res.Manifests[0].Object.GetKind() != "ConfigMap" {
		t.Fatalf("render changed by editing the copies: %+v", res.Manifests)
	}
	// And the guards are still in place in the set.
	if again := set.Trees()["cm.yaml"]; again == nil || len(again.Root.Nodes) == 0 {
		t.Fatalf("Trees after editing a copy: %v", again)
	}
	if s := set.tmpl.Lookup("cm.yaml").Tree.Root.String(); !strings.Contains(s, emitFunc) || !strings.Contains(s, tickFunc) {
		t.Errorf("the set's own trees lost their guards:\n%s", s)
	}
}

func keys(m map[string]*parse.Tree) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
