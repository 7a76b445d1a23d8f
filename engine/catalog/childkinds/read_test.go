package childkinds

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/render"
)

func TestRead(t *testing.T) {
	const (
		pod        = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n"
		deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n"
		helpers    = `{{ define "labels" }}app: x{{ end }}`
	)
	cases := []struct {
		name    string
		chart   bool // the folder is a chart: its test hooks are never applied
		files   map[string]string
		want    []string // apiVersion kind @ where
		unknown []string // where: reason
	}{
		{
			name:  "a chart's test hook needs no rights",
			chart: true,
			files: map[string]string{"_helpers.tpl": helpers, "d.yaml": deployment, "tests/t.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: "{{ .Release.Name }}-test"
  labels:
    {{- include "labels" . | nindent 4 }}
  annotations:
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    "helm.sh/hook": test
spec:
  restartPolicy: Never
`},
			want: []string{"apps/v1 Deployment @ d.yaml:2"},
		},
		{
			name:  "the same in a folder of templates, which applies it",
			files: map[string]string{"t.yaml": pod + "  annotations:\n    helm.sh/hook: test\n"},
			want:  []string{"v1 Pod @ t.yaml:2"},
		},
		{
			name:  "rollback and unknown hooks, quoted, commented; a computed kind is not asked for",
			chart: true,
			files: map[string]string{"t.yaml": pod + "  annotations:\n    'helm.sh/hook': \"post-rollback\"\n---\n" +
				pod + "  annotations:\n    helm.sh/hook: test-success  # helm test\n---\n" +
				"apiVersion: v1\nkind: {{ .Values.kind }}\nmetadata:\n  annotations:\n    helm.sh/hook: someday\n"},
		},
		{
			name:  "the whole test hook in an if",
			chart: true,
			files: map[string]string{"t.yaml": "{{ if .Values.tests }}" + pod + "  annotations:\n    helm.sh/hook: test\n{{ end }}"},
		},
		{
			name:  "hooks that are applied",
			chart: true,
			files: map[string]string{"t.yaml": pod + "  annotations:\n    helm.sh/hook: test, pre-install\n---\n" +
				deployment + "  annotations:\n    helm.sh/hook: post-delete\n"},
			want: []string{"apps/v1 Deployment @ t.yaml:9", "v1 Pod @ t.yaml:2"},
		},
		{
			name:  "a hook that may be absent or other",
			chart: true,
			files: map[string]string{"a.yaml": pod + "  annotations:\n    {{- if .Values.t }}\n    helm.sh/hook: test\n    {{- end }}\n    x: y\n",
				"b.yaml": deployment + "  annotations:\n    helm.sh/hook: {{ .Values.hook }}\n"},
			want: []string{"apps/v1 Deployment @ b.yaml:2", "v1 Pod @ a.yaml:2"},
		},
		{
			// YAML reads these as a number, a boolean and null: the object
			// has no string annotations, so Helm's ordering applies it.
			name:  "a hook value that is no string",
			chart: true,
			files: map[string]string{
				"int.yaml":  pod + "  annotations:\n    'helm.sh/hook': 00\n",
				"bool.yaml": deployment + "  annotations:\n    helm.sh/hook: yes\n",
				"null.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  annotations:\n    helm.sh/hook: ~\n"},
			want: []string{"apps/v1 Deployment @ bool.yaml:2", "v1 Pod @ int.yaml:2", "v1 Secret @ null.yaml:2"},
		},
		{
			name:  "helm.sh/hook elsewhere than a key of metadata.annotations",
			chart: true,
			files: map[string]string{
				"labels.yaml": pod + "  labels:\n    helm.sh/hook: test\n",
				"value.yaml":  deployment + "  annotations:\n    note: |\n      helm.sh/hook: test\n",
				"spec.yaml":   "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  annotations:\n    helm.sh/hook: test\n",
				"flow.yaml":   "apiVersion: v1\nkind: Secret\nmetadata:\n  annotations: {helm.sh/hook: test}\n",
				"nested.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n    annotations:\n      helm.sh/hook: test\n"},
			want: []string{"apps/v1 Deployment @ value.yaml:2", "v1 ConfigMap @ nested.yaml:2", "v1 Pod @ labels.yaml:2", "v1 Secret @ flow.yaml:2", "v1 Service @ spec.yaml:2"},
		},
		{
			name:  "literal",
			files: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n"},
			want:  []string{"v1 ConfigMap @ cm.yaml:2"},
		},
		{
			name: "quoted, commented, quoted keys",
			files: map[string]string{"a.yaml": `apiVersion: "apps/v1"
kind: 'Deployment'   # the app
metadata: {name: a}
---
"apiVersion": v1 # core
'kind': "Service"
metadata: {name: a}
---
apiVersion: batch/v1
kind: {{ "Job" }}
metadata: {name: a}
`},
			want: []string{"apps/v1 Deployment @ a.yaml:2", "batch/v1 Job @ a.yaml:10", "v1 Service @ a.yaml:6"},
		},
		{
			name: "inside if, else and range",
			files: map[string]string{"x.yaml": `{{- if .Spec.a }}
apiVersion: v1
kind: Secret
metadata: {name: a}
{{- else if .Spec.b }}
apiVersion: v1
kind: ConfigMap
metadata: {name: b}
{{- else }}
apiVersion: v1
{{- with .Spec.c }}
kind: ServiceAccount
{{- else }}
kind: Service
{{- end }}
metadata: {name: c}
{{- end }}
{{- range $i, $n := .Spec.nodes }}
---
apiVersion: v1
kind: Pod
metadata:
  name: {{ printf "%s-%d" $.Name $i }}
{{- end }}
`},
			want: []string{"v1 ConfigMap @ x.yaml:7", "v1 Pod @ x.yaml:21", "v1 Secret @ x.yaml:3", "v1 Service @ x.yaml:14", "v1 ServiceAccount @ x.yaml:12"},
		},
		{
			name: "range of documents without a leading separator",
			files: map[string]string{"x.yaml": `{{- range .Spec.items }}
apiVersion: v1
kind: ConfigMap
metadata: {name: {{ . }}}
---
{{- end }}
`},
			want: []string{"v1 ConfigMap @ x.yaml:3"},
		},
		{
			name: "helper-defined manifests, include and template",
			files: map[string]string{
				"_helpers.tpl": `{{- define "sa" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Name }}
{{- end }}
{{- define "role" }}
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ template "roleKind" . }}
metadata: {name: x}
{{- end }}
{{- define "roleKind" }}Role{{ end }}
{{- define "labels" -}}
kind: NotAKind
{{- end }}`,
				"main.yaml": `{{ include "sa" . }}
---
{{- template "role" . }}
  labels:
    {{- include "labels" . | nindent 4 }}
`,
			},
			want: []string{"rbac.authorization.k8s.io/v1 Role @ _helpers.tpl:9", "v1 ServiceAccount @ _helpers.tpl:3"},
		},
		{
			name: "helper piped to trim and nindent 0",
			files: map[string]string{
				"_h.tpl": "{{ define \"kind\" }}\n  Service\n{{ end }}{{ define \"doc\" }}\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n{{ end }}",
				"s.yaml": "apiVersion: v1\nkind: {{ include \"kind\" . | trim }}\nmetadata: {name: a}\n---\n{{- include \"doc\" . | nindent 0 }}\n",
			},
			want: []string{"v1 Secret @ _h.tpl:5", "v1 Service @ s.yaml:2"},
		},
		{
			name: "multiple documents, separators with content, blank documents",
			files: map[string]string{"m.yaml": `---
# only a comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
--- # a comment
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: a}
---
{{- if false }}
apiVersion: v1
{{- end }}
--- apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: a}
`},
			want: []string{"networking.k8s.io/v1 NetworkPolicy @ m.yaml:9", "policy/v1 PodDisruptionBudget @ m.yaml:16", "v1 ConfigMap @ m.yaml:5"},
			// {{ if false }} is not evaluated: its apiVersion alone is a document without a kind.
			unknown: []string{"m.yaml:13: no literal kind: line in this manifest"},
		},
		{
			name: "silent actions make no content",
			files: map[string]string{"p.yaml": `{{- $x := include "name" . }}
{{ requeueAfter "1m" }}
{{- if .Spec.run }}
apiVersion: v1
kind: Pod
metadata: {name: {{ $x }}}
{{- end }}
`, "_h.tpl": `{{ define "name" }}{{ .Name }}{{ end }}`},
			want: []string{"v1 Pod @ p.yaml:5"},
		},
		{
			name: "break and continue",
			files: map[string]string{"b.yaml": `{{- range .Spec.items }}
{{- if .skip }}{{ continue }}{{ end }}
{{- if .stop }}{{ break }}{{ end }}
---
apiVersion: v1
kind: Secret
metadata: {name: {{ .name }}}
{{- end }}
`},
			want: []string{"v1 Secret @ b.yaml:6"},
		},
		{
			name:    "computed kind",
			files:   map[string]string{"cm.yaml": "apiVersion: v1\nkind: {{ .Spec.kind }}\nmetadata: {name: a}\n"},
			unknown: []string{"cm.yaml:2: the kind comes from {{.Spec.kind}}"},
		},
		{
			name: "computed apiVersion, in a range",
			files: map[string]string{"cm.yaml": `{{- range .Spec.things }}
---
apiVersion: {{ .group }}/v1
kind: Thing
metadata: {name: a}
{{- end }}
`},
			unknown: []string{"cm.yaml:3: the apiVersion comes from {{.group}}"},
		},
		{
			name:    "kind from a variable and a default",
			files:   map[string]string{"cm.yaml": "{{ $k := \"ConfigMap\" }}apiVersion: v1\nkind: {{ $k | default \"Secret\" }}\nmetadata: {name: a}\n"},
			unknown: []string{`cm.yaml:2: the kind comes from {{$k | default "Secret"}}`},
		},
		{
			name: "whole manifests from toYaml and tpl",
			files: map[string]string{"raw.yaml": `{{- range .Spec.manifests }}
---
{{ toYaml . }}
{{- end }}
---
{{ tpl .Spec.template . }}
`},
			unknown: []string{"raw.yaml:3: no literal kind: line in this manifest", "raw.yaml:6: no literal kind: line in this manifest"},
		},
		{
			name:    "dynamic helper name",
			files:   map[string]string{"d.yaml": "{{ include .Spec.helper . }}\n", "_h.tpl": `{{ define "x" }}apiVersion: v1` + "\nkind: Pod\n{{ end }}"},
			unknown: []string{"d.yaml:1: no literal kind: line in this manifest"},
		},
		{
			name:    "indented helper is not top level",
			files:   map[string]string{"i.yaml": "apiVersion: v1\n{{ include \"k\" . | indent 2 }}\nmetadata: {name: a}\n", "_h.tpl": `{{ define "k" }}kind: Pod{{ end }}`},
			unknown: []string{"i.yaml:1: no literal kind: line in this manifest"},
		},
		{
			name:  "recursive helper",
			files: map[string]string{"r.yaml": "apiVersion: v1\nkind: ConfigMap\ndata:\n{{ include \"r\" 3 }}\n", "_h.tpl": `{{ define "r" }}{{ if . }}{{ include "r" (sub . 1) }}{{ end }}{{ end }}`},
			want:  []string{"v1 ConfigMap @ r.yaml:2"},
		},
		{
			name:  "status.yaml and helpers' own text are not children",
			files: map[string]string{"status.yaml": "apiVersion: v1\nkind: {{ .x }}\n", "_h.tpl": "apiVersion: v1\nkind: Secret\n", "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"},
			want:  []string{"v1 ConfigMap @ cm.yaml:2"},
		},
		{
			name:    "kind without apiVersion",
			files:   map[string]string{"k.yaml": "kind: ConfigMap\nmetadata: {name: a}\n"},
			unknown: []string{"k.yaml:1: no literal apiVersion: line in the manifest of kind ConfigMap"},
		},
		{
			name:    "kind value on the next line",
			files:   map[string]string{"k.yaml": "apiVersion: v1\nkind:\n  ConfigMap\nmetadata: {name: a}\n"},
			unknown: []string{"k.yaml:2: the kind: line has no value"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, err := render.Parse(tc.files)
			if err != nil {
				t.Fatal(err)
			}
			var never NeverApplied
			if tc.chart {
				never = chart.NeverApplied
			}
			children, unknown, err := Read(set, never)
			if err != nil {
				t.Fatal(err)
			}
			var got, gotUnknown []string
			for _, c := range children {
				got = append(got, c.APIVersion+" "+c.Kind+" @ "+c.Where.String())
			}
			for _, u := range unknown {
				gotUnknown = append(gotUnknown, u.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("children:\n got %q\nwant %q", got, tc.want)
			}
			if !slices.Equal(gotUnknown, tc.unknown) {
				t.Errorf("unknown:\n got %q\nwant %q", gotUnknown, tc.unknown)
			}
		})
	}
}

// TestReadCoversRender checks the analysis against real renders: every
// kind in the golden output of engine/render's cases is found statically.
func TestReadCoversRender(t *testing.T) {
	cases, err := os.ReadDir("../../render/testdata")
	if err != nil {
		t.Fatal(err)
	}
	fixtures := map[string]bool{"object.yaml": true, "children.yaml": true, "cluster.yaml": true, "golden.yaml": true}
	for _, c := range cases {
		dir := filepath.Join("../../render/testdata", c.Name())
		golden, err := os.ReadFile(filepath.Join(dir, "golden.yaml"))
		if err != nil {
			continue // fuzz corpora
		}
		t.Run(c.Name(), func(t *testing.T) {
			files := map[string]string{}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.IsDir() || fixtures[e.Name()] {
					continue
				}
				data, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				files[e.Name()] = string(data)
			}
			set, err := render.Parse(files)
			if err != nil {
				t.Fatal(err)
			}
			children, unknown, err := Read(set, nil)
			if err != nil || len(unknown) > 0 {
				t.Fatalf("unknown %v, err %v", unknown, err)
			}
			static := map[string]bool{}
			for _, c := range children {
				static[c.APIVersion+" "+c.Kind] = true
			}
			checked := 0
			for _, doc := range strings.Split(string(golden), "\n---\n") {
				if !strings.HasPrefix(strings.TrimPrefix(doc, "---\n"), "# Source:") {
					continue
				}
				checked++
				var m struct{ APIVersion, Kind string }
				if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
					t.Fatal(err)
				}
				if !static[m.APIVersion+" "+m.Kind] {
					t.Errorf("rendered %s %s, not found statically (found %v)", m.APIVersion, m.Kind, children)
				}
			}
			if want := strings.Count(string(golden), "# Source:"); checked != want {
				t.Errorf("checked %d manifests of %d", checked, want)
			}
		})
	}
}

// TestReadManyBranches: paths that differ only in text that can
// be no apiVersion or kind are followed as one.
func TestReadManyBranches(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  # {{ .Name }}\ndata:\n")
	for i := range 40 {
		fmt.Fprintf(&b, "  {{ if .Spec.a%d }}a%d: {{ .Spec.a%d }}{{ end }}{{ if .Spec.b%d }}-{{ else }}+{{ end }}\n", i, i, i, i)
		fmt.Fprintf(&b, "{{ if .Spec.c%d }}c%d: x{{ end }}{{ range .Spec.d%d }}d{{ end }}\n", i, i, i)
	}
	b.WriteString("  {{- range .Spec.list }}{{ range . }}{{ if . }}{{ . }}{{ else }}{{ break }}{{ end }}{{ end }}{{ end }}\n")
	set, err := render.Parse(map[string]string{"cm.yaml": b.String()})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	children, unknown, err := Read(set, nil)
	if err != nil || len(unknown) > 0 || len(children) != 1 {
		t.Fatalf("children %v, unknown %v, err %v", children, unknown, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}

func TestReadTooManyBranches(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ")
	for i := range 30 {
		fmt.Fprintf(&b, "{{ if .Spec.k%d }}K%d{{ end }}", i, i)
	}
	b.WriteString("\nmetadata: {name: x}\n")
	set, err := render.Parse(map[string]string{"cm.yaml": b.String()})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Read(set, nil)
	if err == nil || !strings.Contains(err.Error(), "cm.yaml: too many branches to follow statically; declare the kinds it renders in kind.yaml children") {
		t.Fatalf("err %v", err)
	}
}
