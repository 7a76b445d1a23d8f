package author

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// liveGroup is the live test's own: no other test serves or installs it.
const liveGroup = "live.author.tmplop.io"

var liveApps = cluster.GVR(liveGroup, "v1", "liveapps")

// editLatencyBudget is the promise (a file edit is served within a second)
// plus slack for a loaded machine.
const editLatencyBudget = 2 * time.Second

// TestLiveFolders runs the operator on an empty templates directory and
// changes the directory under it: a folder copied in is served, an edit of
// a template re-renders within a second, a broken edit keeps the last good
// version, and a removed folder stops the kind and deletes nothing.
func TestLiveFolders(t *testing.T) {
	ctx := context.Background()
	if out, err := env.Kubectl(ctx, "apply", "--server-side", "-f", filepath.Join("testdata", "live", "crd.yaml")); err != nil {
		t.Fatalf("install the CRD: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = env.Kubectl(context.Background(), "delete", "crd", "liveapps."+liveGroup, "--wait=false")
	})
	if _, err := env.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd/liveapps."+liveGroup); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	templates := t.TempDir()
	op := harness.StartOperator(t, bin, "run", "--kubeconfig", env.Kubeconfig, "--templates", templates,
		"--namespace", ns, "--state-namespace", ns, "--field-manager", "author-live")
	liveWaitOutput(t, op, 30*time.Second, "No kind folder yet in "+templates+"; waiting for one")
	if !op.Alive() {
		t.Fatalf("the operator exited on an empty templates directory:\n%s", op.Output())
	}

	t.Log("a folder copied in is served")
	folder := filepath.Join(templates, "liveapp")
	if err := os.CopyFS(folder, os.DirFS(filepath.Join("testdata", "live", "liveapp"))); err != nil {
		t.Fatal(err)
	}
	liveWaitOutput(t, op, 30*time.Second, "Serving kind")
	env.CreateSpec(t, liveApps, "LiveApp", ns, "a1", map[string]any{"message": "hello"})
	liveWaitChild(t, ns, "a1-child", 30*time.Second, map[string]string{"message": "hello", "template": "v1"})

	t.Log("an edit of a child template is served within a second")
	latency := liveMeasureEdit(t, ns, "a1-child", func() {
		liveEdit(t, folder, "configmap.yaml", `template: "v1"`, `template: "v2"`)
	}, "v2")
	t.Logf("edit latency, from the write of configmap.yaml to the child's change seen by a watch: %s", latency.Round(time.Millisecond))
	if latency > editLatencyBudget {
		t.Errorf("edit served after %s, want under 1s (at most %s with slack)", latency, editLatencyBudget)
	}
	// A second edit, so that one measure is not luck.
	latency = liveMeasureEdit(t, ns, "a1-child", func() {
		liveEdit(t, folder, "configmap.yaml", `template: "v2"`, `template: "v3"`)
	}, "v3")
	t.Logf("edit latency, second edit: %s", latency.Round(time.Millisecond))
	if latency > editLatencyBudget {
		t.Errorf("second edit served after %s, want under 1s (at most %s with slack)", latency, editLatencyBudget)
	}

	t.Log("a broken edit keeps the last good version")
	skipped := strings.Count(op.Output(), "Kind folder skipped")
	if err := os.WriteFile(filepath.Join(folder, "configmap.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 10*time.Second, "the operator logs that the broken folder was skipped", func(context.Context) (bool, error) {
		out := op.Output()
		if strings.Count(out, "Kind folder skipped") <= skipped {
			return false, nil
		}
		line := liveLastLine(out, "Kind folder skipped")
		if !strings.Contains(line, folder) || !strings.Contains(line, "configmap.yaml") || !strings.Contains(line, "lastGoodVersionServed=true") {
			return false, fmt.Errorf("the log line does not name the folder, the file and the last good version: %s", line)
		}
		return true, nil
	})
	env.CreateSpec(t, liveApps, "LiveApp", ns, "a2", map[string]any{"message": "after the broken edit"})
	liveWaitChild(t, ns, "a2-child", 30*time.Second, map[string]string{"message": "after the broken edit", "template": "v3"})

	t.Log("a removed folder stops the kind and deletes nothing")
	if err := os.RemoveAll(folder); err != nil {
		t.Fatal(err)
	}
	liveWaitOutput(t, op, 10*time.Second, "Kind folder removed: stopping the kind")
	env.Patch(t, liveApps, ns, "a1", `{"spec":{"message":"changed after the folder was removed"}}`)
	// The kind served its edits within a second; three is plenty to see
	// a change it would still apply.
	time.Sleep(3 * time.Second)
	for name, want := range map[string]map[string]string{
		"a1-child": {"message": "hello", "template": "v3"},
		"a2-child": {"message": "after the broken edit", "template": "v3"},
	} {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("child %s after the folder was removed: %v", name, err)
		}
		for k, v := range want {
			if cm.Data[k] != v {
				t.Errorf("child %s: data.%s = %q after the folder was removed, want %q (unchanged)", name, k, cm.Data[k], v)
			}
		}
	}
	if !op.Alive() {
		t.Fatalf("the operator exited:\n%s", op.Output())
	}
}

// liveEdit rewrites a file of the folder with one string replaced, as
// an editor saves it (in place).
func liveEdit(t *testing.T, folder, file, old, next string) {
	t.Helper()
	path := filepath.Join(folder, file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if !strings.Contains(s, old) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(s, old, next, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// liveMeasureEdit watches the child, runs edit, and returns the time from the
// edit to the child's data.template becoming want, as the watch delivers it.
func liveMeasureEdit(t *testing.T, ns, child string, edit func(), want string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, child, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", child).String(), ResourceVersion: cm.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	edit()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch of %s ended before data.template became %q", child, want)
			}
			if ev.Type != watch.Modified {
				continue
			}
			if cm := ev.Object.(*corev1.ConfigMap); cm.Data["template"] == want {
				return time.Since(start)
			}
		case <-ctx.Done():
			t.Fatalf("child %s: data.template not %q within 30s", child, want)
		}
	}
}

// liveWaitChild waits for the ConfigMap child to hold want.
func liveWaitChild(t *testing.T, ns, name string, timeout time.Duration, want map[string]string) {
	t.Helper()
	cluster.Eventually(t, timeout, "child "+name, func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("not found")
		}
		if err != nil {
			return false, err
		}
		for k, v := range want {
			if cm.Data[k] != v {
				return false, fmt.Errorf("data.%s = %q, want %q", k, cm.Data[k], v)
			}
		}
		return true, nil
	})
}

// liveWaitOutput waits for substr in the operator's output.
func liveWaitOutput(t *testing.T, op *harness.Operator, timeout time.Duration, substr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := op.WaitForOutput(ctx, substr); err != nil {
		t.Fatal(err)
	}
}

// liveLastLine is the last line of out that holds substr.
func liveLastLine(out, substr string) string {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], substr) {
			return lines[i]
		}
	}
	return ""
}
