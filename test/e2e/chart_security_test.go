package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/test/cluster"
)

// The chart kinds' guards against the CR author (docs/security.md): a
// Helm release is taken over only with the consent of whoever may write
// its objects; helm.sh/resource-policy: keep holds through prune, the
// parent's deletion and garbage collection; a parent's record of its
// deletion hooks is not the CR author's to write.

// TestChartHelmReleaseNeedsConsent: a user who may only write WebApps in
// a namespace creates a WebApp named as a Helm release there, with an
// image of their own. The kind opts in to Helm releases
// (adoptHelmReleases, as the shipped one does), and still the release's
// Deployment is not touched: the WebApp says why and how to consent,
// in its condition and a Warning Event. The user cannot give the consent
// (they may not annotate the Deployment); once an account that may write
// the release's objects annotates them, the WebApp takes them over in
// place.
func TestChartHelmReleaseNeedsConsent(t *testing.T) {
	ns := env.Namespace(t)
	values := map[string]any{"image": map[string]any{"tag": "1.25.0"}, "migration": map[string]any{"enabled": false}}
	manifests := helmInstall(t, filepath.Join(env.RepoRoot(), "templates", "webapp"), "shop", ns, values)
	resources := map[string]schema.GroupVersionResource{"ConfigMap": configMapGVR, "Deployment": deployGVR, "Service": serviceGVR}
	installed := map[string]*unstructured.Unstructured{}
	for _, m := range manifests {
		installed[m.GetKind()] = env.CreateObject(t, resources[m.GetKind()], ns, m.DeepCopy())
	}
	tenant := impersonated(t, ns, "tenant", webappGVR, []rbacv1.PolicyRule{
		{APIGroups: []string{"charts.tmplop.io"}, Resources: []string{"webapps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	})
	attack := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "charts.tmplop.io/v1alpha1", "kind": "WebApp",
		"metadata": map[string]any{"name": "shop", "namespace": ns},
		"spec": map[string]any{"image": map[string]any{"repository": "attacker.example/shop", "tag": "6.6.6"},
			"migration": map[string]any{"enabled": false}},
	}}
	if _, err := tenant.Resource(webappGVR).Namespace(ns).Create(t.Context(), attack, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the tenant creates a WebApp: %v", err)
	}
	consent := ownership.AnnotationParent + "=WebApp.charts.tmplop.io/" + ns + "/shop"
	refused := env.WaitCondition(t, webappGVR, ns, "shop", "Reconciled", "False", "OwnershipConflict", "Helm release "+ns+"/shop", consent)
	t.Logf("the WebApp says: %s", cluster.Condition(refused, "Reconciled").Message)
	cluster.Eventually(t, 30*time.Second, "a Warning Event saying how to consent", func(ctx context.Context) (bool, error) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.name": "shop", "involvedObject.kind": "WebApp", "reason": "OwnershipConflict"}.String()})
		if err != nil || len(evs.Items) == 0 {
			return false, err
		}
		e := evs.Items[0]
		return e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, consent), nil
	})
	time.Sleep(2 * time.Second) // a takeover, were there one, would have been written by now
	for kind, before := range installed {
		after, err := env.Get(t.Context(), resources[kind], ns, before.GetName())
		if err != nil {
			t.Fatal(err)
		}
		// Kubernetes' controllers write too (a Deployment's revision and
		// status): what the WebApp would write is compared.
		if after.GetAnnotations()[ownership.AnnotationParent] != "" || len(after.GetOwnerReferences()) > 0 ||
			after.GetLabels()[ownership.LabelManagedBy] != "Helm" ||
			!reflect.DeepEqual(before.Object["spec"], after.Object["spec"]) || !reflect.DeepEqual(before.Object["data"], after.Object["data"]) {
			t.Errorf("%s %s was taken over without the consent of its owner: %v", kind, before.GetName(), after.Object)
		}
	}
	if img := image(t, ns, "shop-webapp"); img != "nginx:1.25.0" {
		t.Fatalf("the tenant's WebApp took the release's Deployment over: it runs %s", img)
	}

	// The consent is not the tenant's to give.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ownership.AnnotationParent, "WebApp.charts.tmplop.io/"+ns+"/shop")
	if _, err := tenant.Resource(deployGVR).Namespace(ns).Patch(t.Context(), "shop-webapp", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the tenant annotated the release's Deployment: %v", err)
	}

	// The release's owner consents for the whole release, as docs/helm.md
	// says: kubectl annotate over the release's manifest (helm get
	// manifest), as an account that may write those objects and nothing
	// else.
	impersonated(t, ns, "release-owner", deployGVR, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "services"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "patch"}},
	})
	release := filepath.Join(t.TempDir(), "manifest.yaml")
	var docs []string
	for _, m := range manifests {
		data, err := yaml.Marshal(m.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	if err := os.WriteFile(release, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := env.Kubectl(t.Context(), "annotate", "-n", ns, "-f", release, consent,
		"--as=system:serviceaccount:"+ns+":release-owner"); err != nil {
		t.Fatalf("the release's owner consents: %v", err)
	} else {
		t.Logf("kubectl annotate: %s", strings.TrimSpace(out))
	}
	env.WaitCondition(t, webappGVR, ns, "shop", "Reconciled", "True", "Reconciled")
	cluster.Eventually(t, 30*time.Second, "the Deployment taken over", func(ctx context.Context) (bool, error) {
		return image(t, ns, "shop-webapp") == "attacker.example/shop:6.6.6", nil
	})
	for kind, before := range installed {
		after, err := env.Get(t.Context(), resources[kind], ns, before.GetName())
		if err != nil {
			t.Fatal(err)
		}
		if after.GetUID() != before.GetUID() {
			t.Errorf("%s %s was replaced, not taken over", kind, before.GetName())
		}
	}
}

// image is the image of the one container of Deployment ns/name.
func image(t *testing.T, ns, name string) string {
	t.Helper()
	d, err := env.Get(t.Context(), deployGVR, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("Deployment %s/%s has %d containers", ns, name, len(containers))
	}
	img, _ := containers[0].(map[string]any)["image"].(string)
	return img
}

// impersonated gives the ServiceAccount ns/name a Role of exactly rules in
// ns, and returns a client that acts as it (the admin impersonates it),
// once the API server's authorizer grants it a read of probe there.
func impersonated(t *testing.T, ns, name string, probe schema.GroupVersionResource, rules []rbacv1.PolicyRule) dynamic.Interface {
	t.Helper()
	ctx := t.Context()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + name}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// RBAC is read from the authorizer's cache: wait until it grants.
	cluster.Eventually(t, 30*time.Second, "the Role of "+name+" in force", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(probe).Namespace(ns).Get(ctx, "none", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	return dyn
}

var keptGVR = cluster.GVR("e2e.tmplop.io", "v1", "kepts")

// TestChartResourcePolicyKeep: children rendered with
// helm.sh/resource-policy: keep outlive what Helm would not delete them
// for. They carry no owner reference to the object (the garbage collector
// would delete them with it), and a child that gains the policy loses the
// one it had; a change of values that stops rendering one
// leaves it (Helm's upgrade); deleting the object leaves them, whether the
// garbage collector deletes the other children (no finalizer) or the
// engine does (a pre-delete hook holds the finalizer); and a new object of
// the same name takes them back, as a helm install of the same release
// does. The children without the policy go each time.
func TestChartResourcePolicyKeep(t *testing.T) {
	startKind(t, "testdata/templates/kept")
	ns := env.Namespace(t)
	secretGVR := cluster.GVR("", "v1", "secrets")
	env.CreateSpec(t, keptGVR, "Kept", ns, "gc", map[string]any{})
	env.CreateSpec(t, keptGVR, "Kept", ns, "fin", map[string]any{"hook": true})
	gc := env.WaitReconciled(t, keptGVR, ns, "gc")
	fin := env.WaitReconciled(t, keptGVR, ns, "fin")
	if !slices.Contains(fin.GetFinalizers(), reconcile.Finalizer) {
		t.Fatalf("finalizers %v: a parent with a pre-delete hook holds %s", fin.GetFinalizers(), reconcile.Finalizer)
	}
	for _, c := range []struct {
		res  schema.GroupVersionResource
		name string
		kept bool
	}{{secretGVR, "gc-db", true}, {configMapGVR, "gc-kept-extra", true}, {configMapGVR, "gc-cfg", false}, {configMapGVR, "gc-later", false}} {
		o, err := env.Get(t.Context(), c.res, ns, c.name)
		if err != nil {
			t.Fatal(err)
		}
		owned := slices.ContainsFunc(o.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == gc.GetUID() })
		if owned == c.kept {
			t.Errorf("%s %s: owner references %v (kept: %v): a kept child must carry none to its parent, another child its controller reference",
				c.res.Resource, c.name, o.GetOwnerReferences(), c.kept)
		}
	}
	keptUID := uidOf(t, secretGVR, ns, "gc-db")

	// The values stop rendering the extra ConfigMaps: the plain one is
	// pruned, the kept one stays. The ConfigMap "later" gains the policy,
	// and with it loses its owner reference.
	env.Patch(t, keptGVR, ns, "gc", `{"spec":{"extra":false,"keepLater":true}}`)
	env.WaitGone(t, configMapGVR, ns, "gc-plain-extra", 30*time.Second)
	env.WaitReconciled(t, keptGVR, ns, "gc")
	if !env.Exists(t, configMapGVR, ns, "gc-kept-extra") {
		t.Errorf("the kept ConfigMap gc-kept-extra was pruned when the values stopped rendering it")
	}
	cluster.Eventually(t, 30*time.Second, "gc-later kept and no longer owned", func(ctx context.Context) (bool, error) {
		o, err := env.Get(ctx, configMapGVR, ns, "gc-later")
		if err != nil {
			return false, err
		}
		if o.GetAnnotations()["helm.sh/resource-policy"] == "keep" && len(o.GetOwnerReferences()) == 0 {
			return true, nil
		}
		return false, fmt.Errorf("annotations %v, owner references %v", o.GetAnnotations(), o.GetOwnerReferences())
	})

	// Deleted with no finalizer: the garbage collector deletes the owned
	// children, and only those.
	env.Delete(t, keptGVR, ns, "gc")
	env.WaitGone(t, keptGVR, ns, "gc", 30*time.Second)
	env.WaitGone(t, configMapGVR, ns, "gc-cfg", 60*time.Second)
	// Deleted through the finalizer: the pre-delete hook runs, the engine
	// deletes the children, and releases the object.
	env.Delete(t, keptGVR, ns, "fin")
	env.WaitGone(t, keptGVR, ns, "fin", 60*time.Second)
	env.WaitGone(t, configMapGVR, ns, "fin-cfg", 60*time.Second)
	env.WaitGone(t, configMapGVR, ns, "fin-later", 60*time.Second)
	env.WaitGone(t, configMapGVR, ns, "fin-farewell", 60*time.Second)
	time.Sleep(3 * time.Second) // what the garbage collector would still delete, it deletes by now
	for _, c := range []struct {
		res  schema.GroupVersionResource
		name string
	}{{secretGVR, "gc-db"}, {configMapGVR, "gc-kept-extra"}, {configMapGVR, "gc-later"}, {secretGVR, "fin-db"}, {configMapGVR, "fin-kept-extra"}} {
		if !env.Exists(t, c.res, ns, c.name) {
			t.Errorf("%s %s, kept by helm.sh/resource-policy, was deleted with its parent", c.res.Resource, c.name)
		}
	}
	if t.Failed() {
		return
	}

	// A new object of the same name takes the kept Secret back in place.
	env.CreateSpec(t, keptGVR, "Kept", ns, "gc", map[string]any{})
	env.WaitCondition(t, keptGVR, ns, "gc", "Ready", "True", "Ready")
	if uid := uidOf(t, secretGVR, ns, "gc-db"); uid != keptUID {
		t.Errorf("the kept Secret was replaced (UID %s -> %s), not taken back", keptUID, uid)
	}
}

func uidOf(t *testing.T, res schema.GroupVersionResource, ns, name string) types.UID {
	t.Helper()
	o, err := env.Get(t.Context(), res, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return o.GetUID()
}

// TestChartDeleteHooksNotForgeable: a CR author who may write their
// Cleanup objects, but not their status, annotates one as if its deletion
// hooks had run, and deletes it: both hooks run all the same, the
// pre-delete Job before the children go, the post-delete Job after.
func TestChartDeleteHooksNotForgeable(t *testing.T) {
	startKind(t, "testdata/templates/cleanup")
	ns := env.Namespace(t)
	tenant := impersonated(t, ns, "tenant", cleanupGVR, []rbacv1.PolicyRule{
		{APIGroups: []string{"e2e.tmplop.io"}, Resources: []string{"cleanups"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	})
	jobs := observe(t, jobGVR, ns, "f-cleanup")
	farewells := observe(t, jobGVR, ns, "f-farewell")
	forged := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.tmplop.io/v1", "kind": "Cleanup",
		"metadata": map[string]any{"name": "f", "namespace": ns, "annotations": map[string]any{
			"operator.tmplop.io/delete-hooks-ran": "true", "operator.tmplop.io/post-delete-hooks-ran": "true"}},
		"spec": map[string]any{"message": "bye"},
	}}
	if _, err := tenant.Resource(cleanupGVR).Namespace(ns).Create(t.Context(), forged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := env.WaitReconciled(t, cleanupGVR, ns, "f")
	if !slices.Contains(o.GetFinalizers(), reconcile.Finalizer) {
		t.Fatalf("finalizers %v: a parent with delete hooks holds %s", o.GetFinalizers(), reconcile.Finalizer)
	}
	// Where the engine keeps its record, the tenant cannot write.
	status := `{"status":{"hooks":{"pre-delete":"forged","post-delete":"forged"}}}`
	if _, err := tenant.Resource(cleanupGVR).Namespace(ns).Patch(t.Context(), "f", types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); !apierrors.IsForbidden(err) {
		t.Fatalf("the tenant wrote the status of its Cleanup: %v", err)
	}
	if err := tenant.Resource(cleanupGVR).Namespace(ns).Delete(t.Context(), "f", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	complete := func(j *unstructured.Unstructured) bool {
		done, _, _ := unstructured.NestedString(j.Object, "status", "completionTime")
		return done != ""
	}
	until(t, jobs, 60*time.Second, "the pre-delete Job, despite the forged annotation, completed", complete)
	until(t, farewells, 60*time.Second, "the post-delete Job, despite the forged annotation, completed", complete)
	env.WaitGone(t, cleanupGVR, ns, "f", 60*time.Second)
}
