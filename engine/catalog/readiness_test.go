package catalog

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestReadinessSpec: readyWhen and dependsOn are checked at load, and their
// errors name kind.yaml, the entry and the files.
func TestReadinessSpec(t *testing.T) {
	const head = "apiVersion: e.io/v1\nkind: App\n"
	job := &fstest.MapFile{Data: []byte("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: m\n")}
	dep := &fstest.MapFile{Data: []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n")}
	svc := &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n")}
	cases := []struct {
		name, kind string
		wantErr    string
	}{
		{name: "valid", kind: head + `
readyWhen:
- apiVersion: e.io/v1
  kind: Database
  expression: '{{ eq (dig "status" "phase" "" .) "Ready" }}'
dependsOn:
  deployment.yaml: [job.yaml]
  service.yaml: [deployment.yaml, job.yaml]
`},
		{name: "cycle of two", kind: head + "dependsOn:\n  deployment.yaml: [job.yaml]\n  job.yaml: [deployment.yaml]\n",
			wantErr: "kind.yaml:4: dependsOn: cycle deployment.yaml -> job.yaml -> deployment.yaml"},
		{name: "cycle of three", kind: head + "dependsOn:\n  service.yaml: [deployment.yaml]\n  deployment.yaml: [job.yaml]\n  job.yaml: [service.yaml]\n",
			wantErr: "kind.yaml:5: dependsOn: cycle deployment.yaml -> job.yaml -> service.yaml -> deployment.yaml"},
		{name: "waits for itself", kind: head + "dependsOn:\n  job.yaml: [job.yaml]\n", wantErr: "kind.yaml:4: dependsOn: job.yaml waits for itself"},
		{name: "unknown key", kind: head + "dependsOn:\n  nosuch.yaml: [job.yaml]\n", wantErr: "kind.yaml:4: dependsOn: nosuch.yaml is not a child template"},
		{name: "unknown dependency", kind: head + "dependsOn:\n  job.yaml: [migrate.yaml]\n", wantErr: "kind.yaml:4: dependsOn: job.yaml waits for migrate.yaml, which is not a child template"},
		{name: "status.yaml is not a child", kind: head + "dependsOn:\n  job.yaml: [status.yaml]\n", wantErr: "status.yaml, which is not a child template"},
		{name: "empty list", kind: head + "dependsOn:\n  job.yaml: []\n", wantErr: "kind.yaml:4: dependsOn: job.yaml: the list of files it waits for is empty"},
		{name: "readyWhen parse error", kind: head + "readyWhen:\n- {apiVersion: e.io/v1, kind: Database, expression: '{{ if }}'}\n",
			wantErr: "kind.yaml:3: readyWhen[0] (Database.e.io): template: readyWhen:1: missing value for if"},
		{name: "readyWhen without kind", kind: head + "readyWhen:\n- {apiVersion: e.io/v1, expression: 'true'}\n",
			wantErr: "kind.yaml:4: readyWhen[0]: apiVersion and kind are required"},
		{name: "readyWhen misspelt field", kind: head + "readyWhen:\n- {apiVersion: e.io/v1, kind: D, expresion: 'true'}\n",
			wantErr: `unknown field "expresion"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{"kind.yaml": {Data: []byte(tc.kind)}, "job.yaml": job, "deployment.yaml": dep, "service.yaml": svc,
				"status.yaml": {Data: []byte("x: 1\n")}}
			k, err := LoadKindFS("app", "test", fsys)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(k.Spec.ReadyWhen) != 1 || len(k.Spec.DependsOn) != 2 {
					t.Fatalf("spec = %+v", k.Spec)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("LoadKindFS: %v, want %q", err, tc.wantErr)
			}
		})
	}
}
