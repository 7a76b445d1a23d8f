package app

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestPlanCommandErrors: what plan refuses before it reads the cluster
// exits 2 (kubectl diff's "error"), with a message saying why.
func TestPlanCommandErrors(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"unknown output":         {[]string{"--templates", "../../../templates", "-o", "yaml"}, `--output "yaml"`},
		"all namespaces and one": {[]string{"--templates", "../../../templates", "-A", "-n", "x"}, "--all-namespaces"},
		"no such kind":           {[]string{"--templates", "../../../templates", "--kind", "Nothing"}, "no kind folder"},
		"no such folder":         {[]string{"--templates", "../../../templates", "--folder", "nothing"}, "no kind folder"},
		"name of several kinds":  {[]string{"--templates", "../../../templates", "a"}, "pick one with --kind or --folder"},
		"missing templates":      {[]string{"--templates", "does-not-exist"}, "does-not-exist"},
		"not a ConfigMap file":   {[]string{"--templates", "../../../crds/memcached.yaml"}, "is not a ConfigMap holding a kind folder"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			cmd := NewRootCommand(&out, &errOut)
			cmd.SetArgs(append([]string{"plan", "--kubeconfig", "does-not-matter"}, tc.args...))
			err := cmd.Execute()
			var ec *exitCode
			if !errors.As(err, &ec) || ec.code != planFailed {
				t.Fatalf("err = %v, want exit code %d", err, planFailed)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestPlanKindsFromConfigMap: a YAML file of ConfigMaps is read as run
// --configmap-selector reads them: each one a folder, its keys the files.
func TestPlanKindsFromConfigMap(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for _, name := range []string{"kind.yaml", "deployment.yaml", "status.yaml", "_helpers.tpl"} {
		data, err := os.ReadFile(filepath.Join("../../../templates/memcached", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(data)
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "memcached", "namespace": "ops"}, "data": files}
	data, err := yaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "folders.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	kinds, err := planKinds(&planFlags{templates: path, kind: "Memcached"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 1 || kinds[0].Name != "memcached" || kinds[0].Dir != "configmap/ops/memcached" || kinds[0].GVK.Kind != "Memcached" {
		t.Fatalf("kinds = %+v, want the memcached folder from configmap/ops/memcached", kinds)
	}
}
