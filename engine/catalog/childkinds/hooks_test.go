package childkinds

import (
	"slices"
	"testing"

	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/render"
)

// TestHookReading: which chart documents the analysis leaves out as hooks
// never applied. Left out only when the text says what YAML reads;
// anything that could print, hide or replace the hook after it (or make
// the object's annotations unreadable) keeps the document's kind. Where a
// document is left out, the render and chart.Order agree.
func TestHookReading(t *testing.T) {
	const (
		head = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n"
		ann  = "  annotations:\n"
		test = "    helm.sh/hook: test\n"
		spec = "spec:\n  containers:\n  - name: c\n    image: {{ .Spec.image }}\n    args: ['{{ .Name }}:80']\n"
	)
	cases := []struct {
		name string
		text string
		drop bool
	}{
		{"helm create's test Pod", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"{{ .Name }}-test-connection\"\n  labels:\n    {{- include \"labels\" . | nindent 4 }}\n" +
			ann + "    {{- with .Spec.ann }}\n    {{- toYaml . | nindent 4 }}\n    {{- end }}\n    \"helm.sh/hook\": test\n" + spec, true},
		{"the last of two hook keys", head + ann + "    helm.sh/hook: pre-install\n" + test + spec, true},
		{"a printed key before the hook", head + ann + "    {{ .Spec.key }}: x\n" + test, true},
		{"a block scalar before the hook", head + ann + "    note: |\n      \"not closed\n" + test, true},
		{"a sequence in the metadata", head + "  finalizers:\n  - a\n  - \"b\"\n" + ann + test, true},
		{"a comment and a quoted value", head + ann + "    # helm test only\n    'helm.sh/hook': \"test\" # here\n", true},

		{"a number", head + ann + "    'helm.sh/hook': 00\n", false},
		{"a boolean", head + ann + "    helm.sh/hook: yes\n", false},
		{"a second annotations", head + ann + test + ann + "    x: z\n", false},
		{"a second flow annotations", head + ann + test + "  annotations: {}\n", false},
		{"a second metadata", head + ann + test + "metadata:\n  name: u\n", false},
		{"a merge after", head + ann + test + "    <<: {helm.sh/hook: pre-install}\n", false},
		{"a printed key after", head + ann + test + "    {{ .Spec.key }}: pre-install\n", false},
		{"printed lines after", head + ann + test + "    {{- toYaml .Spec.ann | nindent 4 }}\n", false},
		{"printed lines in a value after", head + ann + test + "    x: {{ toYaml .Spec.ann | nindent 4 }}\n", false},
		{"printed lines at the top after", head + ann + test + "{{ toYaml .Spec.top }}\n", false},
		{"printed lines in the spec after", head + ann + test + "spec:\n  x: 1\n{{ toYaml .Spec.top | nindent 0 }}\n", false},
		{"a variable of printed lines", "{{- $a := toYaml .Spec.ann | nindent 4 }}\n" + head + ann + test + "    x: {{ $a }}\n", false},
		{"a with of printed lines", head + ann + test + "{{ with toYaml .Spec.top }}\nx: {{ . }}{{ end }}\n", false},
		{"a chart's files", head + ann + test + "spec:\n  x: {{ .Files.Get \"f\" }}\n", false},
		{"a quote that runs over the hook", head + ann + "    a: \"x\n" + test + "    b: \"\n", false},
		{"a flow that runs over the hook", head + ann + "    a: [x,\n" + test + "    ]\n", false},
		{"an escaped key after", head + ann + test + "    \"helm.sh\\/hook\": pre-install\n", false},
		{"an anchored key after", head + ann + test + "    &a helm.sh/hook: pre-install\n", false},
		{"a complex key after", head + ann + test + "    ? helm.sh/hook\n    : pre-install\n", false},
		{"less indented text", head + ann + test + " x: y\n", false},
		{"lines printed in a comment after", head + ann + test + "# {{ toYaml .Spec.top | nindent 0 }}\n", false},
		{"lines printed at the top before the metadata", "{{ toYaml .Spec.ann }}\n" + head + ann + test, true},
		{"lines printed in the metadata before", head + "  {{- toYaml .Spec | nindent 0 }}\n" + ann + test, false},
		{"an indented block printed before", head + "  labels:\n    {{- toYaml .Spec.ann | nindent 4 }}\n" + ann + test, true},
		{"a hook from an action", head + ann + "    helm.sh/hook: {{ .Spec.hook }}\n", false},
	}
	obj := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns"},
		"spec": map[string]any{"image": "busybox", "key": "helm.sh/hook", "hook": "test",
			"ann": map[string]any{"a": "b", "helm.sh/hook": "post-install"},
			"top": map[string]any{"metadata": map[string]any{"name": "c"}}}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, err := render.Parse(map[string]string{"t.yaml": tc.text, "_helpers.tpl": `{{ define "labels" }}app: x{{ end }}`})
			if err != nil {
				t.Fatal(err)
			}
			kinds, unknown, err := Read(set, chart.NeverApplied)
			if err != nil || len(unknown) > 0 {
				t.Fatalf("Read: %v %v", err, unknown)
			}
			if dropped := len(kinds) == 0; dropped != tc.drop {
				t.Fatalf("left out = %v, want %v (kinds %v)", dropped, tc.drop, kinds)
			}
			if !tc.drop {
				return
			}
			res, err := set.Children(t.Context(), render.Input{Object: obj})
			if err != nil {
				return
			}
			o := chart.Order(res.Manifests)
			if applied := slices.Concat(o.Manifests, o.DeleteHooks, o.PostDeleteHooks); len(applied) > 0 {
				t.Errorf("left out, but Order applies %v", applied[0].Object.Object)
			}
		})
	}
}
