package author

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

var gadgetsV1alpha1 = cluster.GVR("lintlive.author.tmplop.io", "v1alpha1", "gadgets")

// TestLintLive runs `operator lint --live` against the control plane
// behind the test's proxy: a Gadget CRD of two versions stored at
// v1alpha1 (the CRD's None conversion: no webhook runs), two objects, and
// a folder whose conversion to the hub fails for one of them. The finding
// names that object and the template's line, not the other object; and
// the proxy saw lint's gets and lists, and not one write.
func TestLintLive(t *testing.T) {
	ctx := context.Background()
	const crdName = "gadgets.lintlive.author.tmplop.io"
	dir := filepath.Join("testdata", "lintlive")
	if out, err := env.Kubectl(ctx, "apply", "--server-side", "-f", filepath.Join(dir, "crd.yaml")); err != nil {
		t.Fatalf("install the CRD: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = env.Kubectl(context.Background(), "delete", "crd", crdName, "--wait=false") })
	if _, err := env.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+crdName); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	cluster.Eventually(t, 30*time.Second, "the v1alpha1 gadgets are served", func(ctx context.Context) (bool, error) {
		_, err := env.Resource(gadgetsV1alpha1, ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	env.CreateSpec(t, gadgetsV1alpha1, "Gadget", ns, "fine", map[string]any{"size": int64(2), "tier": "gold"})
	env.CreateSpec(t, gadgetsV1alpha1, "Gadget", ns, "broken", map[string]any{"size": int64(3), "tier": "bad"})

	proxy, err := harness.NewProxy(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := proxy.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(ctx, bin, "lint", "--live", "--kubeconfig", kubeconfig, "--templates", filepath.Join(dir, "templates"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("lint --live:\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("lint --live: %v, want exit status 1 (an error finding)", err)
	}

	want := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(filepath.Join(dir, "templates", "gadget", "convert.v1alpha1.v1.yaml")) +
		`:2: error LNT104 .*tier bad has no v1 equivalent \(Gadget ` + ns + `/broken in the cluster\)$`)
	if !want.MatchString(stdout.String()) {
		t.Errorf("no finding matching %s", want)
	}
	if strings.Contains(stdout.String(), ns+"/fine") {
		t.Errorf("a finding names %s/fine, which converts", ns)
	}
	if n := strings.Count(stdout.String(), "in the cluster"); n != 1 {
		t.Errorf("%d findings about the cluster's objects, want 1", n)
	}
	if s := "2 object(s) read at v1alpha1"; !strings.Contains(stderr.String(), s) {
		t.Errorf("stderr lacks %q", s)
	}

	reads := proxy.Count(func(r harness.Request) bool {
		return r.Method == "GET" && strings.HasPrefix(r.Path, "/apis/lintlive.author.tmplop.io/v1alpha1/gadgets")
	})
	writes := proxy.Count(harness.IsWrite)
	t.Logf("through the proxy: %d requests, %d lists of gadgets, %d writes", len(proxy.Requests()), reads, writes)
	if reads == 0 {
		t.Error("lint --live did not list the gadgets through the proxy")
	}
	if writes != 0 {
		t.Errorf("lint --live made %d writes, want 0", writes)
		for _, r := range proxy.Requests() {
			if harness.IsWrite(r) {
				t.Logf("write: %s %s", r.Method, r.Path)
			}
		}
	}
}
