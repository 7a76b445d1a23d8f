package author

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// scaffoldGroup is this test's own: no other test serves or installs it.
const scaffoldGroup = "scaffold.author.tmplop.io"

// TestScaffold is the author's loop on what `operator create kind` writes,
// unedited, for both scopes: lint, run with --install-crds, apply the
// sample, and see the child, the computed status and the printer columns.
func TestScaffold(t *testing.T) {
	dir := t.TempDir()
	tmpl, examples, crds := filepath.Join(dir, "templates"), filepath.Join(dir, "examples"), filepath.Join(dir, "crds")
	for _, args := range [][]string{
		{"--kind", "WebApp"},
		{"--kind", "Site", "--namespaced=false"},
	} {
		out := scaffoldRun(t, append([]string{"create", "kind", "--group", scaffoldGroup, "--version", "v1alpha1",
			"--dir", tmpl, "--examples", examples, "--crds", crds}, args...)...)
		t.Logf("operator create kind %s:\n%s", strings.Join(args, " "), out)
	}
	scaffoldRun(t, "lint", "--templates", tmpl)

	// The CRDs that --install-crds installs outlive the operator: remove
	// them (and so every object of the kinds) after it has stopped.
	t.Cleanup(func() {
		_, _ = env.Kubectl(context.Background(), "delete", "crd", "webapps."+scaffoldGroup, "sites."+scaffoldGroup,
			"--ignore-not-found", "--wait=false")
	})
	ns, state := env.Namespace(t), env.Namespace(t)
	harness.StartOperator(t, bin, "run", "--kubeconfig", env.Kubeconfig, "--templates", tmpl, "--install-crds",
		"--field-manager", "scaffold-test", "--state-namespace", state)

	// The samples as written, but the cluster-scoped Site's Deployment goes
	// to the test's namespace rather than to default.
	scaffoldApply(t, "-n", ns, "-f", filepath.Join(examples, "webapp.yaml"))
	site, err := os.ReadFile(filepath.Join(examples, "site.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	siteNS := strings.Replace(string(site), "targetNamespace: default\n", "targetNamespace: "+ns+"\n", 1)
	if siteNS == string(site) {
		t.Fatalf("examples/site.yaml sets no targetNamespace: default:\n%s", site)
	}
	sitePath := filepath.Join(dir, "site-in-ns.yaml")
	if err := os.WriteFile(sitePath, []byte(siteNS), 0o644); err != nil {
		t.Fatal(err)
	}
	scaffoldApply(t, "-f", sitePath)

	webapps := schema.GroupVersionResource{Group: scaffoldGroup, Version: "v1alpha1", Resource: "webapps"}
	sites := schema.GroupVersionResource{Group: scaffoldGroup, Version: "v1alpha1", Resource: "sites"}
	scaffoldWaitReady(t, webapps, ns, "webapp-sample", ns, 2)
	scaffoldWaitReady(t, sites, "", "site-sample", ns, 2)
	scaffoldColumns(t, []string{"get", "webapps", "-n", ns}, "webapp-sample", "2", "2", "True")
	scaffoldColumns(t, []string{"get", "sites"}, "site-sample", "2", "2", "True")

	// A WebApp without a spec gets the schema's defaults (spec's default={}
	// makes the API server fill in the fields' own).
	bare := filepath.Join(dir, "bare.yaml")
	if err := os.WriteFile(bare, []byte("apiVersion: "+scaffoldGroup+"/v1alpha1\nkind: WebApp\nmetadata:\n  name: bare\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scaffoldApply(t, "-n", ns, "-f", bare)
	scaffoldWaitReady(t, webapps, ns, "bare", ns, 1)

	// replicas: 0 scales down: the template's required lets 0 through,
	// where sprig's default would have made it 1.
	if out, err := env.Kubectl(t.Context(), "patch", "webapp", "webapp-sample", "-n", ns, "--type", "merge", "-p", `{"spec":{"replicas":0}}`); err != nil {
		t.Fatalf("scale to 0: %v: %s", err, out)
	}
	scaffoldWaitReady(t, webapps, ns, "webapp-sample", ns, 0)
	scaffoldColumns(t, []string{"get", "webapps", "-n", ns}, "webapp-sample", "0", "0", "True")
}

// scaffoldRun runs the operator binary to completion and fails the test unless
// it exits 0.
func scaffoldRun(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("operator %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// scaffoldApply applies with kubectl, retrying while the operator installs the
// CRD (until then the kind is unknown).
func scaffoldApply(t *testing.T, args ...string) {
	t.Helper()
	cluster.Eventually(t, 60*time.Second, "kubectl apply "+strings.Join(args, " "), func(ctx context.Context) (bool, error) {
		_, err := env.Kubectl(ctx, append([]string{"apply"}, args...)...)
		return err == nil, err
	})
}

// scaffoldWaitReady waits for the object's Deployment (named after it, in childNS)
// to have replicas Pods, and for the object's status to report them ready
// with Ready True for its current generation.
func scaffoldWaitReady(t *testing.T, res schema.GroupVersionResource, ns, name, childNS string, replicas int64) {
	t.Helper()
	cluster.Eventually(t, 90*time.Second, fmt.Sprintf("%s %s: Deployment and status of %d ready Pods", res.Resource, name, replicas), func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(childNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if d.Spec.Replicas == nil || int64(*d.Spec.Replicas) != replicas || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
			return false, fmt.Errorf("deployment spec: replicas %v, image %s", d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
		}
		o, err := env.Get(ctx, res, ns, name)
		if err != nil {
			return false, err
		}
		ready, found, _ := unstructured.NestedInt64(o.Object, "status", "readyReplicas")
		gen, c := cluster.ObservedGeneration(o), cluster.Condition(o, "Ready")
		if !found || ready != replicas || gen != o.GetGeneration() || c.Status != "True" {
			return false, fmt.Errorf("status: readyReplicas %d (set %v), observedGeneration %d of %d, Ready %s %s: %s",
				ready, found, gen, o.GetGeneration(), c.Status, c.Reason, c.Message)
		}
		return true, nil
	})
}

// scaffoldColumns checks `kubectl <args>`: the scaffold's columns (Replicas, Ready)
// then engine/crd's (Ready, Age; Reason with -o wide), and name's row.
func scaffoldColumns(t *testing.T, args []string, name string, want ...string) {
	t.Helper()
	out, err := env.Kubectl(t.Context(), args...)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "NAME REPLICAS READYPODS READY AGE" {
		t.Errorf("kubectl %s: header %q, want NAME REPLICAS READYPODS READY AGE:\n%s", strings.Join(args, " "), got, out)
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == name {
			if got, w := strings.Join(f[:len(f)-1], " "), strings.Join(append([]string{name}, want...), " "); got != w {
				t.Errorf("kubectl %s: row %q, want %q then the age", strings.Join(args, " "), l, w)
			}
			return
		}
	}
	t.Errorf("kubectl %s: no row %s:\n%s", strings.Join(args, " "), name, out)
}
