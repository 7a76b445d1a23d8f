package author

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/tmplop/operator/test/cluster"
)

// TestMigrateCommand: where the CRDs are someone else's to install,
// `operator migrate` moves the stored objects to the storage version: a
// CRD whose storage moved from v1alpha1 to v1 has every object written
// back and storedVersions pruned to [v1]; a second run writes nothing;
// a CRD that does not exist fails the command, and the others named
// with it are migrated still.
func TestMigrateCommand(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	group := "migratecmd.example.com"
	crdName := "gadgets." + group
	ext := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	spec := func(storage string) apiextensionsv1.CustomResourceDefinitionSpec {
		open := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)}},
		}}
		var versions []apiextensionsv1.CustomResourceDefinitionVersion
		for _, v := range []string{"v1alpha1", "v1"} {
			versions = append(versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: v == storage, Schema: open})
		}
		return apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.NamespaceScoped, Versions: versions,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"}}
	}
	if _, err := ext.Create(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdName}, Spec: spec("v1alpha1")}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ext.Delete(context.Background(), crdName, metav1.DeleteOptions{}) })
	gvr := schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "gadgets"}
	cluster.Eventually(t, 30*time.Second, "CRD served", func(ctx context.Context) (bool, error) {
		_, err := env.Resource(gvr, ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	const objects = 40
	for i := range objects {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1alpha1", "kind": "Gadget",
			"metadata": map[string]any{"name": fmt.Sprintf("g-%02d", i)}, "spec": map[string]any{"size": int64(i)}}}
		if _, err := env.Resource(gvr, ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	live, err := ext.Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.Spec = spec("v1")
	if _, err := ext.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 30*time.Second, "storedVersions lists both", func(ctx context.Context) (bool, error) {
		c, err := ext.Get(ctx, crdName, metav1.GetOptions{})
		return err == nil && slices.Equal(c.Status.StoredVersions, []string{"v1alpha1", "v1"}), err
	})
	resourceVersions := func() map[string]string {
		list, err := env.Resource(gvr, ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, o := range list.Items {
			out[o.GetName()] = o.GetResourceVersion()
		}
		return out
	}
	before := resourceVersions()

	migrate := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"migrate", "--kubeconfig", env.Kubeconfig, "--storage-migration-rate", "500"}, args...)...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := migrate("nothere."+group, crdName)
	if code == 0 || !strings.Contains(out, "nothere."+group) {
		t.Errorf("migrate of a CRD that does not exist: exit %d, want an error naming it\n%s", code, out)
	}
	if !strings.Contains(out, fmt.Sprintf("%s: %d objects written back", crdName, objects)) {
		t.Errorf("migrate: want %d objects of %s written back\n%s", objects, crdName, out)
	}
	c, err := ext.Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Status.StoredVersions, []string{"v1"}) {
		t.Errorf("storedVersions = %v, want [v1]", c.Status.StoredVersions)
	}
	after := resourceVersions()
	for name, rv := range before {
		if after[name] == rv {
			t.Errorf("%s not written back (resourceVersion %s)", name, rv)
		}
	}

	out, code = migrate(crdName)
	if code != 0 || !strings.Contains(out, crdName+": every object is at the storage version") {
		t.Errorf("second migrate: exit %d, want 0 and nothing to do\n%s", code, out)
	}
	if again := resourceVersions(); !maps.Equal(again, after) {
		t.Error("the second migrate wrote objects")
	}
}
