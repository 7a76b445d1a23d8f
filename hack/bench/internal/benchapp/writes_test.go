package benchapp

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

// TestLimitWritesWhatTheOperatorWrites compares, for each kind, the
// limit's children and status with what `operator render --field-manager
// limit` says the operator applies for the same BenchApp: a limit that
// wrote less would flatter it.
func TestLimitWritesWhatTheOperatorWrites(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := harness.BuildOperator(root)
	if err != nil {
		t.Fatal(err)
	}
	app := New("limit", Name(7))
	app.SetUID("6f1c2a8e-0000-4000-8000-000000000007")
	app.SetGeneration(3)
	// 2 replicas: the status names them (0/2 available).
	if err := unstructured.SetNestedField(app.Object, int64(2), "spec", "size"); err != nil {
		t.Fatal(err)
	}
	data, err := yaml.Marshal(app.Object)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, k := range Kinds {
		t.Run(k.Name, func(t *testing.T) {
			rendered, out := render(t, bin, filepath.Join(root, k.Templates), file)
			for name, tc := range map[string]struct {
				got  *unstructured.Unstructured
				want map[string]any
			}{
				"Deployment": {Deployment(k, app), rendered["Deployment"]},
				"Service":    {Service(k, app), rendered["Service"]},
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
				got := normalized(t, Status(k, app, time.Now()).Object)["status"].(map[string]any)
				// The preview's transition times are its own clock's:
				// compare everything else.
				for _, st := range []map[string]any{got, want} {
					conds, _ := st["conditions"].([]any)
					for _, c := range conds {
						delete(c.(map[string]any), "lastTransitionTime")
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("limit's status differs from the operator's\nlimit:    %v\noperator: %v", got, want)
				}
			})
		})
	}
}

// render runs `operator render --field-manager limit` of the object in file
// over templates, and returns its children by kind and its status preview
// under "status", and its output.
func render(t *testing.T, bin, templates, file string) (map[string]map[string]any, []byte) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, "render", "--templates", templates, "--field-manager", Manager, "-f", file)
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
	return rendered, out
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
