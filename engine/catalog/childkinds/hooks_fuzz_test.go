package childkinds

import (
	"slices"
	"testing"
	"time"

	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/render"
)

// FuzzHookSkip: what the analysis leaves out of a chart's kinds as hooks
// never applied, chart.Order never applies. Rendered from any template the
// analysis reads without an unknown document, with values that turn hooks
// and branches on and off, every manifest Order applies (at install,
// upgrade or deletion) must be of a kind that is still among the chart's
// kinds, whenever the analysis without the hook rule finds that kind.
func FuzzHookSkip(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  labels:\n    {{- include \"labels\" . | nindent 4 }}\n  annotations:\n    {{- with .Spec.ann }}\n    {{- toYaml . | nindent 4 }}\n    {{- end }}\n    \"helm.sh/hook\": test\n",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    {{- if .Spec.t }}\n    helm.sh/hook: test\n    {{- end }}\n    x: y\n",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: {{ .Spec.hook }}\n",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    note: |\n      helm.sh/hook: test\n",
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: t\n  annotations: {helm.sh/hook: test}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    'helm.sh/hook': \"test,pre-install\"\n",
		"{{ range .Spec.list }}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n{{ end }}",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n    {{ .Spec.key }}: pre-install\n  annotations:\n    x: z\n",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    a: \"x\n    helm.sh/hook: test\"\n    <<: {helm.sh/hook: pre-install}\n",
		"{{ $a := toYaml .Spec.top }}apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\nspec:\n  x: {{ toYaml .Spec.ann | nindent 4 }}\n{{ $a }}\n",
	} {
		f.Add(seed)
	}
	obj := func() map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "namespace": "ns"},
			"spec": map[string]any{"t": true, "f": false, "hook": "pre-install", "test": "test",
				"ann": map[string]any{"a": "b", "helm.sh/hook": "post-install"}, "list": []any{int64(1), int64(2)},
				"key": "helm.sh/hook", "top": map[string]any{"metadata": map[string]any{"name": "c"}}}}
	}
	budget := render.Budget{Timeout: 500 * time.Millisecond, MaxOutputBytes: 1 << 20}
	f.Fuzz(func(t *testing.T, text string) {
		set, err := render.Parse(map[string]string{"t.yaml": text, "_helpers.tpl": `{{ define "labels" }}app: x{{ end }}`})
		if err != nil {
			return
		}
		all, unknown, err := Read(set, nil)
		if err != nil || len(unknown) > 0 {
			return
		}
		kinds, _, err := Read(set, chart.NeverApplied)
		if err != nil {
			t.Fatalf("the analysis with the hook rule failed where the one without it did not: %v", err)
		}
		found := map[string]bool{}
		for _, c := range all {
			found[c.APIVersion+" "+c.Kind] = true
		}
		kept := map[string]bool{}
		for _, c := range kinds {
			kept[c.APIVersion+" "+c.Kind] = true
			if !found[c.APIVersion+" "+c.Kind] {
				t.Fatalf("the hook rule added %s %s", c.APIVersion, c.Kind)
			}
		}
		res, err := set.Children(t.Context(), render.Input{Object: obj(), Budget: budget})
		if err != nil {
			return
		}
		o := chart.Order(res.Manifests)
		for _, m := range slices.Concat(o.Manifests, o.DeleteHooks, o.PostDeleteHooks) {
			gvk := m.Object.GroupVersionKind()
			k := gvk.GroupVersion().String() + " " + gvk.Kind
			if found[k] && !kept[k] {
				t.Fatalf("%s is applied (annotations %v) but left out as a hook never applied; kinds %v", k, m.Object.GetAnnotations(), kinds)
			}
		}
	})
}
