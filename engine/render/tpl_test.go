package render

import (
	"runtime/metrics"
	"strings"
	"testing"
)

// TestTpl: what tpl strings see and leave behind, whichever way they are
// run (alone in the runner, or in a clone when they define templates).
func TestTpl(t *testing.T) {
	tests := []struct {
		name, tmpl, want, err string
	}{
		{name: "helpers are visible", tmpl: `{{ tpl "{{ include \"h\" . }}" . }}`, want: "h-o"},
		{name: "nested", tmpl: `{{ tpl "{{ tpl \"{{ .Name }}\" . }}" . }}`, want: "o"},
		{name: "defines stay local", tmpl: `{{ tpl "{{ define \"x\" }}X{{ end }}{{ include \"x\" . }}" . }}{{ include "x" . }}`, err: `no template named "x"`},
		{name: "defines are visible to nested tpl", tmpl: `{{ tpl "{{ define \"x\" }}X{{ end }}{{ tpl \"{{ include \\\"x\\\" . }}\" . }}" . }}`, want: "X"},
		{name: "an empty string after another", tmpl: `{{ tpl "a" . }}|{{ tpl "" . }}|{{ tpl "  " . }}`, want: "a||  "},
		{name: "the strings are not helpers", tmpl: `{{ tpl "secret" . }}{{ include "tpl#1" . }}`, err: `no template named "tpl#1"`},
		{name: "a define does not replace a helper outside its call", tmpl: `{{ tpl "{{ define \"h\" }}evil{{ end }}" . }}{{ include "h" . }}`, want: "h-o"},
		{name: "parse error", tmpl: `{{ tpl "{{ .Name }" . }}`, err: "tpl: line 1 of the template string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := mustParse(t, map[string]string{"_h.tpl": `{{ define "h" }}h-{{ .Name }}{{ end }}`, "status.yaml": "v: '" + tc.tmpl + "'"})
			for range 2 { // the second render runs on the instance the first used
				res, err := set.Status(t.Context(), Input{Object: map[string]any{"metadata": map[string]any{"name": "o"}}})
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("err = %v, want %q", err, tc.err)
					}
					continue
				}
				if err != nil || res.Status["v"] != tc.want {
					t.Fatalf("v = %q, %v; want %q", res.Status["v"], err, tc.want)
				}
			}
		})
	}
}

// TestTplInALoop: tpl of strings without defines costs what they weigh,
// not a clone of the folder's templates each (80 KiB).
func TestTplInALoop(t *testing.T) {
	set := mustParse(t, map[string]string{"a.yaml": `{{ range 1000 }}{{ $x := tpl "{{ add1 1 }}" . }}{{ end }}`})
	if _, err := set.Children(t.Context(), Input{}); err != nil {
		t.Fatal(err)
	}
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	if _, err := set.Children(t.Context(), Input{}); err != nil {
		t.Fatal(err)
	}
	metrics.Read(sample)
	if per := (sample[0].Value.Uint64() - before) / 1000; per > 8<<10 {
		t.Errorf("%d bytes a tpl call", per)
	}
}
