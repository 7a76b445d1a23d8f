package author

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tmplop/operator/engine/crdinstall"
	"github.com/tmplop/operator/test/cluster"
	"github.com/tmplop/operator/test/harness"
)

// installGroup is the install test's own: no other test serves or installs it.
const installGroup = "install.author.tmplop.io"

var (
	widgets      = cluster.GVR(installGroup, "v1", "widgets")
	crdsResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
)

// TestInstallCRDs runs the operator with --install-crds on a folder that
// carries its own crd.yaml: the CRD is installed and Established and an
// object reconciles; a crd.yaml that removes a field an object sets is
// refused (the CRD stays as it was, the log names the field and the
// object); a crd.yaml that only adds a field is applied.
func TestInstallCRDs(t *testing.T) {
	ctx := context.Background()
	crdName := "widgets." + installGroup
	// A run killed before its cleanup may have left it on a shared plane.
	if _, err := env.Kubectl(ctx, "delete", "crd", crdName, "--ignore-not-found", "--wait=true", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = env.Kubectl(context.Background(), "delete", "crd", crdName, "--wait=false") })
	ns := env.Namespace(t)
	templates := t.TempDir()
	folder := filepath.Join(templates, "widget")
	if err := os.CopyFS(folder, os.DirFS(filepath.Join("testdata", "install", "widget"))); err != nil {
		t.Fatal(err)
	}
	original, err := os.ReadFile(filepath.Join(folder, "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const manager = "author-install"
	op := harness.StartOperator(t, bin, "run", "--kubeconfig", env.Kubeconfig, "--templates", templates, "--install-crds",
		"--namespace", ns, "--state-namespace", ns, "--field-manager", manager)

	t.Log("the folder's CRD is installed, Established, and its objects reconcile")
	liveWaitOutput(t, op, 60*time.Second, "Serving kind")
	crd := installGetCRD(t, crdName)
	if !installEstablished(crd) {
		t.Fatalf("CRD %s is served but not Established: %+v", crdName, crd.Status.Conditions)
	}
	if !installAppliedBy(crd, manager) {
		t.Errorf("CRD %s was not applied (server-side) by field manager %s: %+v", crdName, manager, crd.ManagedFields)
	}
	env.CreateSpec(t, widgets, "Widget", ns, "w1", map[string]any{"message": "hi", "replicas": int64(2)})
	liveWaitChild(t, ns, "w1-child", 30*time.Second, map[string]string{"message": "hi", "replicas": "2"})

	t.Log("a crd.yaml that removes a field an object sets is refused")
	removed := strings.Replace(string(original), "                replicas: {type: integer}\n", "", 1)
	if removed == string(original) {
		t.Fatal("testdata crd.yaml has no replicas field to remove")
	}
	if err := os.WriteFile(filepath.Join(folder, "crd.yaml"), []byte(removed), 0o644); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 15*time.Second, "the operator logs the refused CRD change", func(context.Context) (bool, error) {
		line := liveLastLine(op.Output(), "its CRD was not installed")
		if line == "" {
			return false, nil
		}
		for _, want := range []string{"refused", "spec.replicas", ns + "/w1", "lastGoodVersionServed=true"} {
			if !strings.Contains(line, want) {
				return false, fmt.Errorf("the log line has no %q: %s", want, line)
			}
		}
		t.Logf("operator log: %s", line)
		return true, nil
	})
	crd = installGetCRD(t, crdName)
	if _, ok := installSpecFields(t, crd)["replicas"]; !ok {
		t.Fatalf("CRD %s lost spec.replicas although the change was refused", crdName)
	}
	w1, err := env.Get(ctx, widgets, ns, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(w1.Object, "spec", "replicas"); r != 2 {
		t.Errorf("w1 spec.replicas = %d after the refused change, want 2", r)
	}
	// The last good version goes on serving.
	env.CreateSpec(t, widgets, "Widget", ns, "w2", map[string]any{"message": "after the refusal", "replicas": int64(5)})
	liveWaitChild(t, ns, "w2-child", 30*time.Second, map[string]string{"message": "after the refusal", "replicas": "5"})

	t.Log("a crd.yaml that only adds a field is applied")
	added := strings.Replace(string(original), "                replicas: {type: integer}\n",
		"                replicas: {type: integer}\n                color: {type: string}\n", 1)
	if err := os.WriteFile(filepath.Join(folder, "crd.yaml"), []byte(added), 0o644); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 15*time.Second, "the CRD has the added field", func(ctx context.Context) (bool, error) {
		crd := installGetCRD(t, crdName)
		fields := installSpecFields(t, crd)
		_, color := fields["color"]
		_, replicas := fields["replicas"]
		return color && replicas && installEstablished(crd), nil
	})
	liveWaitOutput(t, op, 15*time.Second, "CRD updated")
	w1 = env.Patch(t, widgets, ns, "w1", `{"spec":{"color":"red"}}`)
	if c, _, _ := unstructured.NestedString(w1.Object, "spec", "color"); c != "red" {
		t.Errorf("w1 spec.color = %q after the added field, want red (pruned?)", c)
	}
	if !op.Alive() {
		t.Fatalf("the operator exited:\n%s", op.Output())
	}
}

// foreignGroup is the foreign-CRD test's own: no other test serves or
// installs it.
const foreignGroup = "foreign.author.tmplop.io"

// TestInstallCRDsLeavesForeignCRD installs a CRD as another project would,
// with kubectl apply --server-side, then runs the operator with
// --install-crds on a folder whose crd.yaml adds a version and a label to
// it: the operator changes nothing (same resourceVersion, generation,
// labels and versions), logs the refusal with the CRD's managers and what
// to do, and does not start the kind. After the explicit takeover that the
// message names, the folder's CRD is applied and the kind starts.
func TestInstallCRDsLeavesForeignCRD(t *testing.T) {
	ctx := context.Background()
	crdName := "gadgets." + foreignGroup
	gadgets := cluster.GVR(foreignGroup, "v1", "gadgets")
	if _, err := env.Kubectl(ctx, "delete", "crd", crdName, "--ignore-not-found", "--wait=true", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = env.Kubectl(context.Background(), "delete", "crd", crdName, "--wait=false") })
	if out, err := env.Kubectl(ctx, "apply", "--server-side", "-f", filepath.Join("testdata", "install", "foreign-crd.yaml")); err != nil {
		t.Fatalf("install the other project's CRD: %v\n%s", err, out)
	}
	if _, err := env.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+crdName); err != nil {
		t.Fatal(err)
	}
	before := installGetCRD(t, crdName)

	ns := env.Namespace(t)
	templates := t.TempDir()
	folder := filepath.Join(templates, "gadget")
	if err := os.CopyFS(folder, os.DirFS(filepath.Join("testdata", "install", "gadget"))); err != nil {
		t.Fatal(err)
	}
	const manager = "author-foreign"
	op := harness.StartOperator(t, bin, "run", "--kubeconfig", env.Kubeconfig, "--templates", templates, "--install-crds",
		"--namespace", ns, "--state-namespace", ns, "--field-manager", manager)

	t.Log("the operator refuses to change the other project's CRD")
	var refusal string
	cluster.Eventually(t, 60*time.Second, "the operator logs the refused CRD", func(context.Context) (bool, error) {
		refusal = liveLastLine(op.Output(), "its CRD was not installed")
		if refusal == "" {
			return false, nil
		}
		for _, want := range []string{"CRD " + crdName + " was not created by this operator", "field manager " + manager,
			"managed by kubectl", "remove crd.yaml from the folder",
			"kubectl apply --server-side --field-manager=" + manager + " -f " + filepath.Join(folder, "crd.yaml"),
			"lastGoodVersionServed=false"} {
			if !strings.Contains(refusal, want) {
				return false, fmt.Errorf("the log line has no %q: %s", want, refusal)
			}
		}
		return true, nil
	})
	t.Logf("operator log: %s", refusal)
	// The folder is synced at start and on changes; give it a second sync
	// (a change of the folder that keeps the refusal) before looking.
	installTouch(t, folder, "kind.yaml")
	env.CreateSpec(t, gadgets, "Gadget", ns, "g1", map[string]any{"message": "hello"})
	time.Sleep(3 * time.Second)
	after := installGetCRD(t, crdName)
	if after.ResourceVersion != before.ResourceVersion || after.Generation != before.Generation {
		t.Errorf("CRD %s changed: resourceVersion %s -> %s, generation %d -> %d", crdName,
			before.ResourceVersion, after.ResourceVersion, before.Generation, after.Generation)
	}
	if fmt.Sprint(after.Labels) != fmt.Sprint(before.Labels) || after.Labels["team"] != "" {
		t.Errorf("CRD %s labels %v, were %v", crdName, after.Labels, before.Labels)
	}
	if len(after.Spec.Versions) != 1 {
		t.Errorf("CRD %s has %d versions, the other project's has 1", crdName, len(after.Spec.Versions))
	}
	for _, m := range after.ManagedFields {
		if m.Manager == manager {
			t.Errorf("CRD %s has a managedFields entry of the operator: %+v", crdName, m)
		}
	}
	for _, line := range []string{"Kind folder loaded", "Serving kind", "CRD created", "CRD updated"} {
		if out := op.Output(); strings.Contains(out, line) {
			t.Errorf("the operator logged %q: it started the kind or changed its CRD:\n%s", line, out)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "g1-child", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("g1-child: %v, want NotFound: the kind was started from the refused folder", err)
	}
	if !op.Alive() {
		t.Fatalf("the operator exited:\n%s", op.Output())
	}

	t.Log("after the explicit takeover, the folder's CRD is applied and the kind starts")
	if out, err := env.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "--field-manager="+manager,
		"-f", filepath.Join(folder, "crd.yaml")); err != nil {
		t.Fatalf("take the CRD over: %v\n%s", err, out)
	}
	installTouch(t, folder, "kind.yaml")
	liveWaitOutput(t, op, 30*time.Second, "Serving kind")
	liveWaitChild(t, ns, "g1-child", 30*time.Second, map[string]string{"message": "hello"})
	crd := installGetCRD(t, crdName)
	if !installAppliedBy(crd, manager) || crd.Labels["team"] != "folder" || len(crd.Spec.Versions) != 2 {
		t.Errorf("CRD %s after the takeover: labels %v, %d versions, managers %v", crdName, crd.Labels, len(crd.Spec.Versions), crdinstall.Managers(crd))
	}
	if _, err := env.Get(ctx, gadgets, ns, "g1"); err != nil {
		t.Error(err)
	}
}

// installTouch rewrites a file of a folder as it is: a change for the
// operator's file watch.
func installTouch(t *testing.T, folder, file string) {
	t.Helper()
	p := filepath.Join(folder, file)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func installGetCRD(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	u, err := env.Get(context.Background(), crdsResource, "", name)
	if err != nil {
		t.Fatalf("get CRD %s: %v", name, err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
		t.Fatal(err)
	}
	return &crd
}

func installEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func installAppliedBy(crd *apiextensionsv1.CustomResourceDefinition, manager string) bool {
	for _, m := range crd.ManagedFields {
		if m.Manager == manager && m.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// installSpecFields are the properties of spec in the CRD's v1 schema.
func installSpecFields(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) map[string]apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1" && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			return v.Schema.OpenAPIV3Schema.Properties["spec"].Properties
		}
	}
	t.Fatalf("CRD %s has no v1 schema", crd.Name)
	return nil
}
