package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/tmplop/operator/internal/testsupport/fakelookup"
)

var errBoom = errors.New("informer cache not synced")

// sample is the object of the error tests: spec.size is deliberately absent.
func sample() map[string]any {
	return map[string]any{
		"apiVersion": "cache.example.com/v1alpha1",
		"kind":       "Memcached",
		"metadata":   map[string]any{"name": "sample", "namespace": "default"},
		"spec":       map[string]any{"image": "memcached", "empty": ""},
	}
}

const configMapHead = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		phase  string // "parse", "children" or "status"
		object map[string]any
		lookup Lookup
		want   string // (*Error).Error()
		line   int    // (*Error).Line
	}{
		{
			name:  "required missing",
			files: map[string]string{"deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: {{ required \"spec.size is required\" .Spec.size }}\n"},
			phase: "children",
			want:  "deployment.yaml:6: spec.size is required",
			line:  6,
		},
		{
			name:  "required empty string",
			files: map[string]string{"deployment.yaml": "x: {{ required \"spec.empty must be set\" .Spec.empty }}"},
			phase: "children",
			want:  "deployment.yaml:1: spec.empty must be set",
			line:  1,
		},
		{
			name:  "parse error with line",
			files: map[string]string{"deployment.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }\n"},
			phase: "parse",
			want:  `deployment.yaml:4: unexpected "}" in operand`,
			line:  4,
		},
		{
			name:  "parse error in helper",
			files: map[string]string{"_helpers.tpl": "\n{{ define \"x\" }}\nnever closed\n", "deployment.yaml": "x: 1"},
			phase: "parse",
			want:  "_helpers.tpl:4: unexpected EOF",
			line:  4,
		},
		{
			name:  "undefined function",
			files: map[string]string{"deployment.yaml": "a: 1\nb: {{ nope .Name }}\n"},
			phase: "parse",
			want:  `deployment.yaml:2: function "nope" not defined`,
			line:  2,
		},
		{
			name:  "env is removed",
			files: map[string]string{"deployment.yaml": `x: {{ env "HOME" }}`},
			phase: "parse",
			want:  `deployment.yaml:1: function "env" not defined`,
			line:  1,
		},
		{
			name:  "manifest missing kind",
			files: map[string]string{"deployment.yaml": "apiVersion: v1\nmetadata:\n  name: x\n"},
			phase: "children",
			want:  "deployment.yaml: document 0: kind is required (a non-empty string)",
		},
		{
			name:  "second manifest missing name",
			files: map[string]string{"configmaps.yaml": configMapHead + "---\n# empty\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n"},
			phase: "children",
			want:  "configmaps.yaml: document 1: ConfigMap: metadata.name is required (a non-empty string)",
		},
		{
			name:  "generateName refused",
			files: map[string]string{"job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: run-\n"},
			phase: "children",
			want:  "job.yaml: document 0: Job: metadata.generateName is not supported, set metadata.name: server-side apply needs a name",
		},
		{
			name:  "manifest is a list",
			files: map[string]string{"list.yaml": "- a\n- b\n"},
			phase: "children",
			want:  "list.yaml: document 0: a manifest must be a YAML mapping, got a list",
		},
		{
			name:  "invalid YAML names the output line",
			files: map[string]string{"bad.yaml": configMapHead + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a: b\n"},
			phase: "children",
			want:  "bad.yaml: document 1: invalid YAML at line 9 of the output: mapping values are not allowed in this context",
		},
		{
			name:  "status renders a list",
			files: map[string]string{"status.yaml": "- ready\n- 3\n"},
			phase: "status",
			want:  "status.yaml: must render a YAML mapping, got a list",
		},
		{
			name:  "status renders a scalar",
			files: map[string]string{"status.yaml": "ready"},
			phase: "status",
			want:  "status.yaml: must render a YAML mapping, got a string",
		},
		{
			name:  "status renders several documents",
			files: map[string]string{"status.yaml": "a: 1\n---\nb: 2\n"},
			phase: "status",
			want:  "status.yaml: must render a single YAML mapping, got several documents",
		},
		{
			name:  "status indexes a kind that has no children",
			files: map[string]string{"status.yaml": "\nready: {{ (index .Children.Deployment .Name).status.readyReplicas }}\n"},
			phase: "status",
			want:  "status.yaml:2: at <index .Children.Deployment .Name>: error calling index: index of untyped nil",
			line:  2,
		},
		{
			name:  "nil pointer on nested missing field",
			files: map[string]string{"deployment.yaml": configMapHead + "data:\n  b: {{ .Spec.a.b }}\n"},
			phase: "children",
			want:  "deployment.yaml:6: at <.Spec.a.b>: nil pointer evaluating interface {}.b",
			line:  6,
		},
		{
			name: "nil pointer inside a helper names the helper file",
			files: map[string]string{
				"_helpers.tpl":    "{{- define \"deep\" }}\n{{ .Spec.a.b }}\n{{- end }}",
				"deployment.yaml": "a: {{ include \"deep\" . }}",
			},
			phase: "children",
			want:  "_helpers.tpl:2: at <.Spec.a.b>: nil pointer evaluating interface {}.b",
			line:  2,
		},
		{
			name: "required inside a helper",
			files: map[string]string{
				"_helpers.tpl":    "{{- define \"size\" -}}\n\n{{ required \"spec.size is required\" .Spec.size }}\n{{- end }}",
				"deployment.yaml": "replicas: {{ include \"size\" . }}",
			},
			phase: "children",
			want:  "_helpers.tpl:3: spec.size is required",
			line:  3,
		},
		{
			name:  "include of an unknown template",
			files: map[string]string{"deployment.yaml": "\n\na: {{ include \"missing\" . }}"},
			phase: "children",
			want:  `deployment.yaml:3: include: no template named "missing"`,
			line:  3,
		},
		{
			name: "include recursion is bounded",
			files: map[string]string{
				"_helpers.tpl":    `{{ define "loop" }}{{ include "loop" . }}{{ end }}`,
				"deployment.yaml": "a: {{ include \"loop\" . }}",
			},
			phase: "children",
			want:  `deployment.yaml:1: render budget exceeded: depth (1000 nested include, tpl and template calls; recursion?): include "loop"`,
			line:  1,
		},
		{
			name:  "tpl recursion is bounded",
			files: map[string]string{"deployment.yaml": "a: {{ tpl .Spec.self . }}"},
			object: map[string]any{
				"spec": map[string]any{"self": "{{ tpl .Spec.self . }}"},
			},
			phase: "children",
			want:  "deployment.yaml:1: render budget exceeded: depth (1000 nested include, tpl and template calls; recursion?): tpl",
			line:  1,
		},
		{
			name:  "tpl execution error is reported at the call site",
			files: map[string]string{"deployment.yaml": "a: 1\nb: {{ tpl \"x{{ .Spec.a.b }}\" . }}"},
			phase: "children",
			want:  "deployment.yaml:2: at <.Spec.a.b>: nil pointer evaluating interface {}.b",
			line:  2,
		},
		{
			name:  "tpl parse error",
			files: map[string]string{"deployment.yaml": "a: 1\nb: {{ tpl \"{{ .Name }\" . }}"},
			phase: "children",
			want:  `deployment.yaml:2: tpl: line 1 of the template string: unexpected "}" in operand`,
			line:  2,
		},
		{
			name:  "fail",
			files: map[string]string{"deployment.yaml": "{{ if not .Spec.size }}{{ fail \"set spec.size or spec.autoscale\" }}{{ end }}"},
			phase: "children",
			want:  "deployment.yaml:1: set spec.size or spec.autoscale",
			line:  1,
		},
		{
			name:   "lookup error propagates",
			files:  map[string]string{"deployment.yaml": "\n{{ $s := lookup \"v1\" \"Secret\" .Namespace \"db\" }}"},
			phase:  "children",
			lookup: &fakelookup.Objects{Err: errBoom},
			want:   "deployment.yaml:2: lookup v1 Secret default/db: informer cache not synced",
			line:   2,
		},
		{
			name:   "lookupSelect error propagates",
			files:  map[string]string{"status.yaml": "n: {{ len (lookupSelect \"v1\" \"Pod\" .Namespace \"app=x\").items }}"},
			phase:  "status",
			lookup: &fakelookup.Objects{Err: errBoom},
			want:   `status.yaml:1: lookupSelect v1 Pod in default matching "app=x": informer cache not synced`,
			line:   1,
		},
		{
			name:  "bad requeueAfter string",
			files: map[string]string{"deployment.yaml": "\n{{ requeueAfter \"soon\" }}"},
			phase: "children",
			want:  `deployment.yaml:2: requeueAfter: invalid duration "soon": want e.g. "30s", "5m" or "1h"`,
			line:  2,
		},
		{
			name:  "bad requeueAfter type",
			files: map[string]string{"status.yaml": "{{ requeueAfter .Spec }}"},
			phase: "status",
			want:  `status.yaml:1: requeueAfter: want a duration, a duration string or a number of seconds, got map[string]interface {}`,
			line:  1,
		},
		{
			name:  "bad durationUntil",
			files: map[string]string{"status.yaml": "left: {{ durationUntil .Spec.image }}"},
			phase: "status",
			want:  `status.yaml:1: durationUntil: "memcached" is not an RFC 3339 time (e.g. 2025-01-02T15:04:05Z)`,
			line:  1,
		},
		{
			name:  "durationUntil of a missing field",
			files: map[string]string{"status.yaml": "left: {{ durationUntil .Spec.expiresAt }}"},
			phase: "status",
			want:  `status.yaml:1: durationUntil: no time given`,
			line:  1,
		},
		{
			name:  "sprig error keeps its context",
			files: map[string]string{"deployment.yaml": `{{ mustRegexFind "(" "x" }}`},
			phase: "children",
			want:  "deployment.yaml:1: at <mustRegexFind \"(\" \"x\">: error calling mustRegexFind: error parsing regexp: missing closing ): `(`",
			line:  1,
		},
		{
			name:   "input object that is not unstructured content",
			files:  map[string]string{"deployment.yaml": configMapHead},
			phase:  "children",
			object: map[string]any{"spec": map[string]any{"size": 3}}, // int, not int64
			want:   "input object: not JSON-compatible unstructured content: cannot deep copy int",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Parse(tt.files)
			if tt.phase != "parse" {
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				in := Input{Object: sample(), Lookup: tt.lookup, Now: fixedNow}
				if tt.object != nil {
					in.Object = tt.object
				}
				var res *Result
				if tt.phase == "status" {
					res, err = set.Status(t.Context(), in)
				} else {
					res, err = set.Children(t.Context(), in)
				}
				if err != nil && res != nil {
					t.Errorf("got a result with the error: %+v", res)
				}
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			rerr, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("error %q (%T) is not a *render.Error", err, err)
			}
			if rerr.Error() != tt.want {
				t.Errorf("error:\n got  %s\n want %s", rerr, tt.want)
			}
			if rerr.Line != tt.line {
				t.Errorf("line: got %d, want %d", rerr.Line, tt.line)
			}
			if tt.lookup != nil && !errors.Is(err, errBoom) {
				t.Errorf("errors.Is(err, lookup error) = false; the cause must stay reachable")
			}
			if strings.Contains(rerr.Message, "template:") || strings.Contains(rerr.Message, "executing") {
				t.Errorf("message keeps text/template noise: %q", rerr.Message)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{Template: "deployment.yaml", Line: 7, Message: "spec.size is required"}, "deployment.yaml:7: spec.size is required"},
		{Error{Template: "deployment.yaml", Message: "document 0: kind is required"}, "deployment.yaml: document 0: kind is required"},
		{Error{Message: "input object: bad"}, "input object: bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// A folder with several broken files reports the first in name order, so
// the condition shown to users does not flap between reconciles.
func TestParseReportsFirstBrokenFile(t *testing.T) {
	files := map[string]string{"b.yaml": "{{ .X }", "a.yaml": "{{ end }}", "c.yaml": "{{"}
	for range 5 {
		_, err := Parse(files)
		rerr, ok := errors.AsType[*Error](err)
		if !ok || rerr.Template != "a.yaml" {
			t.Fatalf("got %v, want an error in a.yaml", err)
		}
	}
}
