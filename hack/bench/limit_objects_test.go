package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/test/harness"
)

// TestLimitWritesWhatTheOperatorWrites compares the limit's children and
// status with what `operator render --field-manager limit` says the
// operator applies for the same BenchApp: a limit that wrote less would
// flatter it.
func TestLimitWritesWhatTheOperatorWrites(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := harness.BuildOperator(root)
	if err != nil {
		t.Fatal(err)
	}
	app := newBenchApp("limit", appName(7))
	app.SetUID("6f1c2a8e-0000-4000-8000-000000000007")
	app.SetGeneration(3)
	data, err := yaml.Marshal(app.Object)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "render", "--templates", filepath.Join(root, "hack", "bench", "templates"),
		"--field-manager", limitManager, "-f", file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("operator render: %v\n%s", err, stderr.String())
	}
	rendered := map[string]map[string]any{}
	for doc := range strings.SplitSeq(string(out), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(strings.TrimPrefix(doc, "---\n")), &obj); err != nil {
			t.Fatalf("decode rendered document: %v\n%s", err, doc)
		}
		switch {
		case obj["kind"] != nil:
			rendered[obj["kind"].(string)] = obj
		case obj["status"] != nil:
			rendered["status"] = obj
		}
	}

	for name, tc := range map[string]struct {
		got  *unstructured.Unstructured
		want map[string]any
	}{
		"Deployment": {limitDeployment(app), rendered["Deployment"]},
		"Service":    {limitService(app), rendered["Service"]},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.want == nil {
				t.Fatalf("operator render printed no %s:\n%s", name, out)
			}
			if got := normalized(t, tc.got.Object); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("limit's %s differs from the operator's\nlimit:    %v\noperator: %v", name, got, tc.want)
			}
		})
	}

	t.Run("status", func(t *testing.T) {
		want, _ := rendered["status"]["status"].(map[string]any)
		if want == nil {
			t.Fatalf("operator render printed no status:\n%s", out)
		}
		got := normalized(t, limitStatus(app, time.Now()).Object)["status"].(map[string]any)
		// The preview's transition time is its own clock's, and it reads
		// the generation of a file as 0: compare everything else.
		for _, st := range []map[string]any{got, want} {
			delete(st, "observedGeneration")
			for _, c := range st["conditions"].([]any) {
				delete(c.(map[string]any), "lastTransitionTime")
				delete(c.(map[string]any), "observedGeneration")
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("limit's status differs from the operator's\nlimit:    %v\noperator: %v", got, want)
		}
	})
}

// normalized gives m the types YAML decoding gives (float64 numbers).
func normalized(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
