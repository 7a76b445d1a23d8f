package render

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/internal/testsupport/fakelookup"
)

func mustParse(t testing.TB, files map[string]string) *Set {
	t.Helper()
	set, err := Parse(files)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return set
}

// parseFolder parses a folder's templates as the catalog does: the files
// the folder contract reads (layout.Read), then Parse.
func parseFolder(t testing.TB, fsys fs.FS) (*Set, error) {
	t.Helper()
	files, err := layout.Read(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(files.Templates())
}

func TestParseReadsOnlyTemplates(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"kind.yaml":       "not: {{ a template",
		"README.md":       "{{ not a template either",
		"notes.txt":       "{{",
		".swap.yaml":      "{{",
		"deployment.yaml": configMapHead,
		"service.yml":     "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n",
		"status.yaml":     "ready: true\n",
		"_helpers.tpl":    `{{ define "h" }}h{{ end }}`,
		"_more.yaml":      "helpers with any extension are not children\n",
		"sub/child.yaml":  "{{ sub-folders are not read",
	}
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	set, err := parseFolder(t, os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := set.ChildTemplates(), []string{"deployment.yaml", "service.yml"}; !slices.Equal(got, want) {
		t.Errorf("ChildTemplates() = %v, want %v", got, want)
	}
	if !set.HasStatus() {
		t.Error("HasStatus() = false, want true")
	}
	set.ChildTemplates()[0] = "mutated"
	if set.ChildTemplates()[0] != "deployment.yaml" {
		t.Error("ChildTemplates exposes the Set's slice")
	}
}

func TestEmptySet(t *testing.T) {
	set := mustParse(t, nil)
	res, err := set.Children(t.Context(), Input{})
	if err != nil || len(res.Manifests) != 0 {
		t.Fatalf("Children() = %+v, %v; want no manifests", res, err)
	}
	res, err = set.Status(t.Context(), Input{})
	if err != nil || res.Status != nil {
		t.Fatalf("Status() = %+v, %v; want nil status", res, err)
	}
}

func TestManifestOrderAndIndex(t *testing.T) {
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" }
	set := mustParse(t, map[string]string{
		"b.yaml": cm("b0") + "---\n---\n# comment\n---\n" + cm("b1") + "---\nnull\n---\n" + cm("b2"),
		"a.yaml": "\n---\n" + cm("a0"),
		"c.yml":  "{{/* renders nothing */}}",
	})
	res, err := set.Children(t.Context(), Input{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range res.Manifests {
		got = append(got, fmt.Sprintf("%s#%d=%s", m.Template, m.Index, m.Object.GetName()))
	}
	want := []string{"a.yaml#0=a0", "b.yaml#0=b0", "b.yaml#1=b1", "b.yaml#2=b2"}
	if !slices.Equal(got, want) {
		t.Errorf("manifests = %v, want %v", got, want)
	}
}

func TestDocumentsDecodeLikeTheAPI(t *testing.T) {
	set := mustParse(t, map[string]string{"d.yaml": configMapHead + "spec:\n  replicas: {{ .Spec.size }}\n  ratio: 0.5\n  big: 9007199254740993\n"})
	res, err := set.Children(t.Context(), Input{Object: map[string]any{"spec": map[string]any{"size": int64(3)}}})
	if err != nil {
		t.Fatal(err)
	}
	spec := res.Manifests[0].Object.Object["spec"].(map[string]any)
	want := map[string]any{"replicas": int64(3), "ratio": 0.5, "big": int64(9007199254740993)}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("spec = %#v, want %#v", spec, want)
	}
}

// Templates read optional fields of any object without failing, as Helm
// templates read optional values.
func TestDotOfABareObject(t *testing.T) {
	set := mustParse(t, map[string]string{
		"d.yaml": configMapHead + `data:
  size: "{{ .Spec.size }}"
  labels: "{{ len .Labels }}"
  annotations: "{{ len .Annotations }}"
  status: "{{ .Status.phase }}"
  name: "{{ .Name }}/{{ .Namespace }}"
  host: "{{ if .Spec.host }}set{{ else }}unset{{ end }}"
`,
		"status.yaml": "children: {{ len .Children }}\nready: {{ dig \"Deployment\" .Name \"status\" \"readyReplicas\" 0 .Children }}\n",
	})
	for _, obj := range []map[string]any{nil, {"metadata": map[string]any{"name": "n"}}} {
		res, err := set.Children(t.Context(), Input{Object: obj})
		if err != nil {
			t.Fatal(err)
		}
		data := res.Manifests[0].Object.Object["data"].(map[string]any)
		if data["size"] != "" || data["labels"] != "0" || data["status"] != "" || data["host"] != "unset" {
			t.Errorf("data = %v", data)
		}
		st, err := set.Status(t.Context(), Input{Object: obj})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]any{"children": int64(0), "ready": int64(0)}; !reflect.DeepEqual(st.Status, want) {
			t.Errorf("status = %v, want %v", st.Status, want)
		}
	}
}

func TestStatusEmptyOutputIsNil(t *testing.T) {
	set := mustParse(t, map[string]string{"status.yaml": "{{- if .Spec.never }}a: 1{{ end }}\n# nothing to report\n"})
	res, err := set.Status(t.Context(), Input{})
	if err != nil || res.Status != nil {
		t.Fatalf("Status() = %+v, %v; want nil status, no error", res, err)
	}
}

func TestStatusAcceptsUnstructuredChildren(t *testing.T) {
	set := mustParse(t, map[string]string{"status.yaml": "ready: {{ (index .Children.Deployment \"web\").status.readyReplicas }}\n"})
	dep := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"readyReplicas": int64(2)}}}
	res, err := set.Status(t.Context(), Input{Children: map[string]map[string]any{"Deployment": {"web": dep}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status["ready"] != int64(2) {
		t.Errorf("status = %v, want ready: 2", res.Status)
	}
}

// Templates can mutate what they are given (sprig's set, unset, merge); the
// caller's object, children and Lookup results (informer caches) must not
// change.
func TestInputIsNotMutated(t *testing.T) {
	set := mustParse(t, map[string]string{
		"d.yaml": configMapHead + `{{- $_ := set .Spec "injected" true }}
{{- $_ := unset .Object "spec" }}
{{- $_ := set .Labels "x" "y" }}
{{- $s := lookup "v1" "Secret" "" "s" }}{{ $_ := set $s "data" "gone" }}
{{- range (lookup "v1" "Secret" "" "").items }}{{ $_ := set . "kind" "Changed" }}{{ end }}
`,
		"status.yaml": `{{- $_ := set (index .Children.Deployment "web") "status" "changed" }}
{{- $_ := set .Children "Extra" dict }}
x: 1
`,
	})
	obj := map[string]any{
		"metadata": map[string]any{"name": "n", "labels": map[string]any{"a": "b"}},
		"spec":     map[string]any{"size": int64(1)},
	}
	children := map[string]map[string]any{"Deployment": {"web": map[string]any{"status": map[string]any{"readyReplicas": int64(1)}}}}
	cluster := []map[string]any{{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}, "data": map[string]any{"k": "dg=="}}}
	in := Input{Object: obj, Children: children, Lookup: &fakelookup.Objects{Items: cluster}}

	wantObj := runtime.DeepCopyJSON(obj)
	wantChild := runtime.DeepCopyJSON(children["Deployment"]["web"].(map[string]any))
	wantCluster := runtime.DeepCopyJSON(cluster[0])
	if _, err := set.Children(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Status(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obj, wantObj) {
		t.Errorf("Input.Object mutated: %v", obj)
	}
	if len(children) != 1 || !reflect.DeepEqual(children["Deployment"]["web"], wantChild) {
		t.Errorf("Input.Children mutated: %v", children)
	}
	if !reflect.DeepEqual(cluster[0], wantCluster) {
		t.Errorf("Lookup result mutated: %v", cluster[0])
	}
}

func TestLookupWithoutLookup(t *testing.T) {
	set := mustParse(t, map[string]string{"status.yaml": `one: {{ lookup "v1" "Secret" "ns" "s" | toJson }}
all: {{ lookup "v1" "Secret" "ns" "" | toJson }}
selected: {{ lookupSelect "v1" "Secret" "" "a=b" | toJson }}
`})
	res, err := set.Status(t.Context(), Input{})
	if err != nil {
		t.Fatal(err)
	}
	list := map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{}}
	want := map[string]any{"one": map[string]any{}, "all": list, "selected": list}
	if !reflect.DeepEqual(res.Status, want) {
		t.Errorf("status = %#v, want %#v", res.Status, want)
	}
}

// TestConcurrentRenders renders one Set from many goroutines with different
// objects; run with -race. Each render must see only its own object, clock,
// Lookup and requeueAfter calls.
func TestConcurrentRenders(t *testing.T) {
	set := mustParse(t, map[string]string{
		"_helpers.tpl": `{{ define "name" }}{{ .Name }}{{ end }}`,
		"deployment.yaml": `{{- requeueAfter .Spec.size }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "name" . }}
  annotations:
    secret: {{ (lookup "v1" "Secret" "" "s").data.owner | quote }}
    tpl: {{ tpl "{{ .Spec.size }}" . | quote }}
    left: {{ durationUntil "2030-01-01T00:00:00Z" | toString | quote }}
spec:
  replicas: {{ .Spec.size }}
`,
		"status.yaml": "ready: {{ (index .Children.Deployment .Name).status.readyReplicas }}\n{{ requeueAfter .Spec.size }}",
	})
	const goroutines, renders = 8, 40
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range renders {
				n := int64(g*renders + i + 1)
				name := fmt.Sprintf("obj-%d", n)
				now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Duration(n) * time.Hour)
				in := Input{
					Object:   map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": n}},
					Children: map[string]map[string]any{"Deployment": {name: map[string]any{"status": map[string]any{"readyReplicas": n}}}},
					Lookup:   &fakelookup.Objects{Items: []map[string]any{{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}, "data": map[string]any{"owner": name}}}},
					Now:      now,
				}
				res, err := set.Children(t.Context(), in)
				if err != nil {
					t.Error(err)
					return
				}
				obj := res.Manifests[0].Object
				replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
				annotations := obj.GetAnnotations()
				if obj.GetName() != name || replicas != n || res.RequeueAfter != time.Duration(n)*time.Second ||
					annotations["secret"] != name || annotations["tpl"] != fmt.Sprint(n) || annotations["left"] != (time.Duration(n)*time.Hour).String() {
					t.Errorf("render of %s got %s, replicas %d, requeue %v, annotations %v", name, obj.GetName(), replicas, res.RequeueAfter, annotations)
				}
				st, err := set.Status(t.Context(), in)
				if err != nil {
					t.Error(err)
					return
				}
				if st.Status["ready"] != n || st.RequeueAfter != time.Duration(n)*time.Second {
					t.Errorf("status of %s = %v, requeue %v", name, st.Status, st.RequeueAfter)
				}
			}
		})
	}
	wg.Wait()
}
