package catalog

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/layout"
)

func compileKind(t *testing.T, kindYAML string) *Kind {
	t.Helper()
	k, err := Compile("a", "a", layout.Files{KindFile: []byte("apiVersion: a.example.com/v1\nkind: A\n" + kindYAML)})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func obj(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(js), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestSuspendedBy: the annotation "true" suspends any object; the kind's
// field suspends when it holds the boolean true, and nothing else does.
func TestSuspendedBy(t *testing.T) {
	withField := compileKind(t, "suspend: spec.paused\n")
	without := compileKind(t, "")
	cases := []struct {
		name string
		kind *Kind
		obj  string
		want string
	}{
		{"nothing", withField, `{"spec":{}}`, ""},
		{"annotation", without, `{"metadata":{"annotations":{"operator.tmplop.io/suspend":"true"}}}`, SuspendedByAnnotation},
		{"annotation not true", withField, `{"metadata":{"annotations":{"operator.tmplop.io/suspend":"yes"}}}`, ""},
		{"field true", withField, `{"spec":{"paused":true}}`, SuspendedByField},
		{"field false", withField, `{"spec":{"paused":false}}`, ""},
		{"field a string", withField, `{"spec":{"paused":"true"}}`, ""},
		{"field of a kind without suspend", without, `{"spec":{"paused":true}}`, ""},
		{"annotation wins", withField, `{"metadata":{"annotations":{"operator.tmplop.io/suspend":"true"}},"spec":{"paused":true}}`, SuspendedByAnnotation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := tc.kind.SuspendedBy(obj(t, tc.obj)); got != tc.want {
				t.Errorf("SuspendedBy = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStripIgnored: driftIgnore's paths are removed from the children of
// the kinds they name, any version; other kinds' children are untouched.
func TestStripIgnored(t *testing.T) {
	k := compileKind(t, `drift: warn
driftIgnore:
- apiVersion: apps/v1
  kind: Deployment
  paths: [/spec/replicas, /spec/template/spec/containers/0/image, /metadata/annotations/a~1b]
- group: ""
  kind: ConfigMap
  paths: [/data/free, /data/list/1]
`)
	if !k.DriftWarns() || compileKind(t, "").DriftWarns() || compileKind(t, "drift: repair\n").DriftWarns() {
		t.Error("DriftWarns does not follow drift")
	}
	cases := []struct {
		name, in, want string
	}{
		{"deployment", `{"apiVersion":"apps/v1beta2","kind":"Deployment","metadata":{"annotations":{"a/b":"1","c":"2"}},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"a","image":"x"}]}}}}`,
			`{"apiVersion":"apps/v1beta2","kind":"Deployment","metadata":{"annotations":{"c":"2"}},"spec":{"template":{"spec":{"containers":[{"name":"a"}]}}}}`},
		{"configmap, a list item", `{"apiVersion":"v1","kind":"ConfigMap","data":{"free":"x","kept":"y","list":[1,2,3]}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","data":{"kept":"y","list":[1,3]}}`},
		{"paths absent", `{"apiVersion":"v1","kind":"ConfigMap","data":{"list":"not a list"}}`, `{"apiVersion":"v1","kind":"ConfigMap","data":{"list":"not a list"}}`},
		{"another kind", `{"apiVersion":"v1","kind":"Secret","data":{"free":"x"}}`, `{"apiVersion":"v1","kind":"Secret","data":{"free":"x"}}`},
		{"same kind, another group", `{"apiVersion":"x.example.com/v1","kind":"ConfigMap","data":{"free":"x"}}`, `{"apiVersion":"x.example.com/v1","kind":"ConfigMap","data":{"free":"x"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := obj(t, tc.in)
			k.StripIgnored(o)
			got, _ := json.Marshal(o.Object)
			want, _ := json.Marshal(obj(t, tc.want).Object)
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}
