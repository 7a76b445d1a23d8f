package catalog

import (
	"errors"
	"testing"

	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

// TestAuthorErrorsTyped: every mistake Compile finds in a folder's file
// is a *render.Error that names the file, the line of the field and the
// lint code, so that lint, the ConfigMap's Event and catalog's locate read
// them with errors.As and never from the message; the message names
// neither file nor line again.
func TestAuthorErrorsTyped(t *testing.T) {
	const head = "apiVersion: a.example.com/v1\nkind: A\n"
	cases := []struct {
		name  string
		files layout.Files
		file  string
		line  int
		code  string
	}{
		{name: "syntax", files: layout.Files{KindFile: []byte(head + "lookups:\n- a\n b: c\n")}, file: KindFile, line: 5, code: render.CodeKindYAML},
		{name: "unknown field", files: layout.Files{KindFile: []byte(head + "\nworker: 2\n")}, file: KindFile, line: 4, code: render.CodeKindYAML},
		{name: "wrong type", files: layout.Files{KindFile: []byte(head + "workers: many\n")}, file: KindFile, line: 3, code: render.CodeKindYAML},
		{name: "duplicate key", files: layout.Files{KindFile: []byte(head + "workers: 1\nworkers: 2\n")}, file: KindFile, line: 4, code: render.CodeKindYAML},
		{name: "bad apiVersion", files: layout.Files{KindFile: []byte("kind: A\napiVersion: a/b/c\n")}, file: KindFile, line: 2, code: render.CodeKindYAML},
		{name: "negative workers", files: layout.Files{KindFile: []byte(head + "prune: true\nworkers: -1\n")}, file: KindFile, line: 4, code: render.CodeKindYAML},
		{name: "negative revisionHistoryLimit", files: layout.Files{KindFile: []byte(head + "workers: 2\nrevisionHistoryLimit: -1\n")}, file: KindFile, line: 4, code: render.CodeKindYAML},
		{name: "second lookup's selector", files: layout.Files{KindFile: []byte(head + "lookups:\n- {apiVersion: v1, kind: Pod}\n- apiVersion: v1\n  kind: Secret\n  selector: {matchExpressions: [{key: x, operator: Bogus}]}\n")}, file: KindFile, line: 7, code: render.CodeKindYAML},
		{name: "short schema marker", files: layout.Files{KindFile: []byte(head + "spec:\n  size: integer | minimun=1\n")}, file: KindFile, line: 4, code: render.CodeKindYAML},
		{name: "dependsOn unknown file", files: layout.Files{KindFile: []byte(head + "dependsOn:\n  a.yaml: [b.yaml]\n"), "a.yaml": []byte("")}, file: KindFile, line: 4, code: render.CodeKindYAML},
		// rollout (docs/rollout.md).
		{name: "rollout word", files: layout.Files{KindFile: []byte(head + "workers: 1\nrollout: slowly\n")}, file: KindFile, line: 4, code: render.CodeKindYAML},
		{name: "rollout steps shrink", files: layout.Files{KindFile: []byte(head + "rollout:\n  steps: [10%, 5%]\n")}, file: KindFile, line: 3, code: render.CodeKindYAML},
		{name: "rollout step zero", files: layout.Files{KindFile: []byte(head + "rollout:\n  steps: [0, 50%]\n")}, file: KindFile, line: 3, code: render.CodeKindYAML},
		{name: "rollout steps of a built-in kind", files: layout.Files{KindFile: []byte("apiVersion: v1\nkind: Namespace\nrollout:\n  steps: [1]\n")}, file: KindFile, line: 3, code: render.CodeKindYAML},
		// suspend, drift and driftIgnore (docs/suspend-and-drift.md).
		{name: "suspend not a path", files: layout.Files{KindFile: []byte(head + "workers: 1\nsuspend: spec..suspend\n")}, file: KindFile, line: 4, code: render.CodeKindYAML},
		{name: "suspend in status", files: layout.Files{KindFile: []byte(head + "suspend: status.paused\n")}, file: KindFile, line: 3, code: render.CodeKindYAML},
		{name: "suspend not a bool", files: layout.Files{KindFile: []byte(head + "suspend: {path: spec.x}\n")}, file: KindFile, line: 3, code: render.CodeKindYAML},
		{name: "drift mode", files: layout.Files{KindFile: []byte(head + "prune: true\ndrift: ignore\n")}, file: KindFile, line: 4, code: render.CodeKindYAML},
		{name: "driftIgnore without kind", files: layout.Files{KindFile: []byte(head + "driftIgnore:\n- apiVersion: apps/v1\n  paths: [/spec/replicas]\n")}, file: KindFile, line: 4, code: render.CodeKindYAML},
		{name: "driftIgnore apiVersion and group", files: layout.Files{KindFile: []byte(head + "driftIgnore:\n- kind: Deployment\n  apiVersion: apps/v1\n  group: apps\n  paths: [/spec/replicas]\n")}, file: KindFile, line: 6, code: render.CodeKindYAML},
		{name: "driftIgnore path not a pointer", files: layout.Files{KindFile: []byte(head + "driftIgnore:\n- kind: ConfigMap\n  paths:\n  - /data/a\n  - data.b\n")}, file: KindFile, line: 7, code: render.CodeKindYAML},
		{name: "driftIgnore bad escape", files: layout.Files{KindFile: []byte(head + "driftIgnore:\n- kind: ConfigMap\n  paths:\n  - /data/a~2b\n")}, file: KindFile, line: 6, code: render.CodeKindYAML},
		{name: "driftIgnore the operator's label", files: layout.Files{KindFile: []byte(head + "driftIgnore:\n- {kind: ConfigMap, paths: [/data/a]}\n- kind: Secret\n  paths:\n  - /metadata/labels/app.kubernetes.io~1managed-by\n")}, file: KindFile, line: 7, code: render.CodeKindYAML},
		{name: "driftIgnore the name", files: layout.Files{KindFile: []byte(head + "driftIgnore:\n- kind: ConfigMap\n  paths: [/metadata/name]\n")}, file: KindFile, line: 5, code: render.CodeKindYAML},
		{name: "driftIgnore no paths", files: layout.Files{KindFile: []byte(head + "driftIgnore:\n- kind: ConfigMap\n  paths: []\n")}, file: KindFile, line: 4, code: render.CodeKindYAML},
		{name: "template parse", files: layout.Files{KindFile: []byte(head), "a.yaml": []byte("x: 1\n{{ if }}\n")}, file: "a.yaml", line: 2, code: render.CodeParse},
		// versions (docs/versions.md): each mistake at its entry's field.
		{name: "version name", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v1alpha1\n- name: V2\n")}, file: KindFile, line: 5, code: render.CodeKindYAML},
		{name: "version twice", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v2\n  served: false\n- name: v2\n")}, file: KindFile, line: 6, code: render.CodeKindYAML},
		{name: "two storage versions", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v2\n  storage: true\n- name: v1\n  storage: true\n")}, file: KindFile, line: 7, code: render.CodeKindYAML},
		{name: "storage not served", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v2\n  storage: true\n  served: false\n")}, file: KindFile, line: 6, code: render.CodeKindYAML},
		{name: "hub not served", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v1\n  served: false\n")}, file: KindFile, line: 5, code: render.CodeKindYAML},
		{name: "hub with a schema", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v1\n  spec: {a: string}\n")}, file: KindFile, line: 5, code: render.CodeKindYAML},
		{name: "hub lossy", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v1\n  storage: true\n  lossy: true\n")}, file: KindFile, line: 6, code: render.CodeKindYAML},
		{name: "warning not deprecated", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v2\n  deprecationWarning: old\n")}, file: KindFile, line: 5, code: render.CodeKindYAML},
		{name: "version's short schema", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v2\n  spec:\n    size: integer | minimun=1\n")}, file: KindFile, line: 6, code: render.CodeKindYAML},
		{name: "version field unknown", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v2\n  serve: true\n")}, file: KindFile, line: 5, code: render.CodeKindYAML},
		{name: "versions beside a crd.yaml", files: layout.Files{KindFile: []byte(head + "workers: 1\nversions:\n- name: v2\n"), CRDFile: []byte("x: 1\n")}, file: KindFile, line: 4, code: render.CodeKindYAML},
		{name: "versions of a chart", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v2\n"), layout.ChartFile: []byte("apiVersion: v2\nname: a\nversion: 0.1.0\n"),
			"convert.v2.v1.yaml": []byte(""), "convert.v1.v2.yaml": []byte("")}, file: KindFile, line: 3, code: render.CodeKindYAML},
		{name: "versions of a built-in kind", files: layout.Files{KindFile: []byte("apiVersion: apps/v1\nkind: Deployment\nversions:\n- name: v2\n")}, file: KindFile, line: 2, code: render.CodeKindYAML},
		{name: "conversion missing", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v2\n"), "convert.v2.v1.yaml": []byte("")}, file: "convert.v1.v2.yaml", code: render.CodeFolder},
		{name: "conversion of an unknown version", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v2\n"), "convert.v2.v1.yaml": []byte(""), "convert.v1.v2.yaml": []byte(""), "convert.v3.v1.yaml": []byte("")}, file: "convert.v3.v1.yaml", code: render.CodeFolder},
		{name: "conversion of one version", files: layout.Files{KindFile: []byte(head), "convert.v2.v1.yaml": []byte("")}, file: "convert.v2.v1.yaml", code: render.CodeFolder},
		{name: "conversion between non-hub versions", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v2\n- name: v3\n"), "convert.v2.v1.yaml": []byte(""), "convert.v1.v2.yaml": []byte(""),
			"convert.v3.v1.yaml": []byte(""), "convert.v1.v3.yaml": []byte(""), "convert.v2.v3.yaml": []byte("")}, file: "convert.v2.v3.yaml", code: render.CodeFolder},
		{name: "conversion parse", files: layout.Files{KindFile: []byte(head + "versions:\n- name: v2\n"), "convert.v2.v1.yaml": []byte("a: 1\n{{ if }}\n"), "convert.v1.v2.yaml": []byte("")}, file: "convert.v2.v1.yaml", line: 2, code: render.CodeParse},
		{name: "status of a built-in kind", files: layout.Files{KindFile: []byte("apiVersion: v1\nkind: ConfigMap\n"), layout.StatusFile: []byte("a: 1\n")}, file: layout.StatusFile, code: render.CodeFolder},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile("a", "a", tc.files)
			re, ok := errors.AsType[*render.Error](err)
			if !ok {
				t.Fatalf("err = %v (%T), want a *render.Error", err, err)
			}
			if re.Template != tc.file || re.Line != tc.line || re.Code != tc.code {
				t.Errorf("got %s:%d %s, want %s:%d %s (%v)", re.Template, re.Line, re.Code, tc.file, tc.line, tc.code, err)
			}
			if prefix := tc.file + ":"; len(re.Message) >= len(prefix) && re.Message[:len(prefix)] == prefix {
				t.Errorf("message %q names its file again", re.Message)
			}
		})
	}
}
