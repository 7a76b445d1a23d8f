package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/test/cluster"
)

var webappGVR = cluster.GVR("charts.tmplop.io", "v1alpha1", "webapps")

// TestChartKind: the shipped chart kind (templates/webapp, an unchanged
// Helm chart) converges and is Ready; its pre-install hook Job completes
// before the Deployment that follows it is created; the status names the
// chart; the values reach the children.
func TestChartKind(t *testing.T) {
	ns := env.Namespace(t)
	env.Create(t, webappGVR, ns, `
apiVersion: charts.tmplop.io/v1alpha1
kind: WebApp
metadata:
  name: shop
spec:
  replicaCount: 2
  image:
    tag: "1.25.0"
  greeting: "Welcome to {{ .Release.Name }} in {{ .Release.Namespace }}"
`)
	var o *unstructured.Unstructured
	cluster.Eventually(t, 120*time.Second, "the WebApp Ready", func(ctx context.Context) (bool, error) {
		var err error
		if o, err = env.Get(ctx, webappGVR, ns, "shop"); err != nil {
			return false, err
		}
		return cluster.Condition(o, "Ready").Status == "True", nil
	})
	if c, _, _ := unstructured.NestedStringMap(o.Object, "status", "chart"); c["name"] != "webapp" || c["version"] != "0.1.0" {
		t.Errorf("status.chart = %v, want webapp 0.1.0", c)
	}
	job, err := env.Get(t.Context(), jobGVR, ns, "shop-webapp-migrate-1-25-0")
	if err != nil {
		t.Fatalf("the hook Job: %v", err)
	}
	dep, err := env.Get(t.Context(), deployGVR, ns, "shop-webapp")
	if err != nil {
		t.Fatalf("the Deployment: %v", err)
	}
	completed, _, _ := unstructured.NestedString(job.Object, "status", "completionTime")
	done, err := time.Parse(time.RFC3339, completed)
	if err != nil {
		t.Fatalf("Ready while the hook Job has not completed: %v", job.Object["status"])
	}
	if dep.GetCreationTimestamp().Time.Before(done) {
		t.Errorf("the Deployment was created at %s, before its pre-install hook Job completed at %s", dep.GetCreationTimestamp(), done)
	}
	cm, err := env.Get(t.Context(), configMapGVR, ns, "shop-webapp")
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "index.html"); got != "Welcome to shop in "+ns {
		t.Errorf("index.html = %q: tpl over the spec's greeting with .Release", got)
	}
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "nginx.conf"); !strings.Contains(got, "listen 80") {
		t.Errorf("nginx.conf = %q: .Files.Glob(...).AsConfig", got)
	}

	// An upgrade to a new version: the new migration Job completes before
	// the Deployment moves to the new image.
	env.Patch(t, webappGVR, ns, "shop", `{"spec":{"image":{"tag":"1.26.0"}}}`)
	cluster.Eventually(t, 120*time.Second, "the Deployment on 1.26.0", func(ctx context.Context) (bool, error) {
		d, err := env.Get(ctx, deployGVR, ns, "shop-webapp")
		if err != nil {
			return false, err
		}
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		return len(containers) == 1 && containers[0].(map[string]any)["image"] == "nginx:1.26.0", nil
	})
	job, err = env.Get(t.Context(), jobGVR, ns, "shop-webapp-migrate-1-26-0")
	if err != nil {
		t.Fatalf("the pre-upgrade Job of 1.26.0: %v", err)
	}
	if completed, _, _ := unstructured.NestedString(job.Object, "status", "completionTime"); completed == "" {
		t.Errorf("the Deployment moved to 1.26.0 before its pre-upgrade Job completed: %v", job.Object["status"])
	}
	if env.Exists(t, jobGVR, ns, "shop-webapp-migrate-1-25-0") {
		cluster.Eventually(t, 60*time.Second, "the Job of 1.25.0 pruned", func(ctx context.Context) (bool, error) {
			return !env.Exists(t, jobGVR, ns, "shop-webapp-migrate-1-25-0"), nil
		})
	}
}

// TestChartAdoptsHelmRelease: objects that helm install made for a release
// (Helm's own engine renders the chart; its annotations name the release
// and namespace), once the release's owner consented (each names the
// WebApp in operator.tmplop.io/parent), are taken over in place by the
// WebApp of the same name: no conflict, the same objects (UIDs), and a
// Deployment whose spec did not change is not rolled (its generation
// stays). Without the consent nothing is taken:
// TestChartHelmReleaseNeedsConsent.
func TestChartAdoptsHelmRelease(t *testing.T) {
	ns := env.Namespace(t)
	values := map[string]any{"image": map[string]any{"tag": "1.25.0"}, "migration": map[string]any{"enabled": false}}
	installed := map[string]*unstructured.Unstructured{}
	for _, m := range helmInstall(t, filepath.Join(env.RepoRoot(), "templates", "webapp"), "legacy", ns, values) {
		res := map[string]schema.GroupVersionResource{"ConfigMap": configMapGVR, "Deployment": deployGVR, "Service": serviceGVR}[m.GetKind()]
		ann := m.GetAnnotations()
		ann[ownership.AnnotationParent] = "WebApp.charts.tmplop.io/" + ns + "/legacy"
		m.SetAnnotations(ann)
		installed[m.GetKind()] = env.CreateObject(t, res, ns, m)
	}
	if len(installed) != 3 {
		t.Fatalf("helm installed %d objects, want a ConfigMap, a Deployment and a Service", len(installed))
	}
	env.CreateSpec(t, webappGVR, "WebApp", ns, "legacy", values)
	env.WaitReconciled(t, webappGVR, ns, "legacy")
	time.Sleep(2 * time.Second) // a rollout, were there one, would have begun
	rs, err := env.Resource(cluster.GVR("apps", "v1", "replicasets"), ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Items) > 1 {
		t.Errorf("%d ReplicaSets: the adoption rolled the Deployment's Pods", len(rs.Items))
	}
	for kind, before := range installed {
		res := map[string]schema.GroupVersionResource{"ConfigMap": configMapGVR, "Deployment": deployGVR, "Service": serviceGVR}[kind]
		after, err := env.Get(t.Context(), res, ns, before.GetName())
		if err != nil {
			t.Fatal(err)
		}
		if after.GetUID() != before.GetUID() {
			t.Errorf("%s %s was replaced, not taken over", kind, before.GetName())
		}
		if after.GetAnnotations()[ownership.AnnotationParent] != "WebApp.charts.tmplop.io/"+ns+"/legacy" {
			t.Errorf("%s %s: not adopted: %v", kind, before.GetName(), after.GetAnnotations())
		}
		if kind == "Deployment" && !reflect.DeepEqual(before.Object["spec"], after.Object["spec"]) {
			// The generation may move (the Deployment strategy counts
			// annotation changes too); the Pod template must not.
			t.Errorf("the Deployment's spec changed though nothing did:\nbefore %v\nafter  %v", before.Object["spec"], after.Object["spec"])
		}
	}
}

// helmInstall renders chart as helm install would for release name in
// namespace ns with Helm's own engine, and returns its objects with the
// metadata helm install adds: the release annotations and the managed-by
// label.
func helmInstall(t *testing.T, dir, name, ns string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	ch, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, values); err != nil {
		t.Fatal(err)
	}
	top, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: name, Namespace: ns, Revision: 1, IsInstall: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		t.Fatal(err)
	}
	for f := range files {
		if strings.HasSuffix(f, "NOTES.txt") {
			delete(files, f)
		}
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(m.Content), &u.Object); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[ownership.AnnotationHelmReleaseName], ann[ownership.AnnotationHelmReleaseNamespace] = name, ns
		u.SetAnnotations(ann)
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["app.kubernetes.io/managed-by"] = "Helm"
		u.SetLabels(labels)
		out = append(out, u)
	}
	return out
}

var cleanupGVR = cluster.GVR("e2e.tmplop.io", "v1", "cleanups")

// TestChartDeleteHooks: a chart's pre-delete and post-delete hooks are not
// applied while the object lives; the object holds the finalizer; when it
// is deleted the pre-delete Job runs and completes before any child goes,
// the post-delete Job is created once every other child is gone and
// completes before the object goes, and then nothing is left.
func TestChartDeleteHooks(t *testing.T) {
	startKind(t, "testdata/templates/cleanup")
	ns := env.Namespace(t)
	jobs := observe(t, jobGVR, ns, "c-cleanup")
	farewells := observe(t, jobGVR, ns, "c-farewell")
	env.Create(t, cleanupGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Cleanup\nmetadata:\n  name: c\nspec:\n  message: bye\n")
	o := env.WaitReconciled(t, cleanupGVR, ns, "c")
	if !slices.Contains(o.GetFinalizers(), reconcile.Finalizer) {
		t.Fatalf("finalizers %v: a parent with delete hooks holds %s", o.GetFinalizers(), reconcile.Finalizer)
	}
	if !env.Exists(t, configMapGVR, ns, "c-data") {
		t.Fatal("the chart's ConfigMap is missing")
	}
	for _, hook := range []string{"c-cleanup", "c-farewell"} {
		if env.Exists(t, jobGVR, ns, hook) {
			t.Fatalf("the delete hook %s ran while the object lives", hook)
		}
	}
	env.Delete(t, cleanupGVR, ns, "c")
	completed := until(t, jobs, 90*time.Second, "the pre-delete Job completed", func(j *unstructured.Unstructured) bool {
		done, _, _ := unstructured.NestedString(j.Object, "status", "completionTime")
		if done == "" && !env.Exists(t, configMapGVR, ns, "c-data") {
			t.Errorf("the children went before the pre-delete hook completed")
		}
		return done != ""
	})
	t.Logf("pre-delete Job completed at %s", completed.Object["status"].(map[string]any)["completionTime"])
	first := until(t, farewells, 90*time.Second, "the post-delete Job created", func(*unstructured.Unstructured) bool { return true })
	// Created only once the other children, the pre-delete Job among
	// them, were gone.
	for _, child := range []struct {
		res  schema.GroupVersionResource
		name string
	}{{configMapGVR, "c-data"}, {jobGVR, "c-cleanup"}} {
		if env.Exists(t, child.res, ns, child.name) {
			t.Errorf("the post-delete hook was created while %s %s was still there", child.res.Resource, child.name)
		}
	}
	t.Logf("post-delete Job created at %s", first.GetCreationTimestamp())
	complete := func(j *unstructured.Unstructured) bool {
		done, _, _ := unstructured.NestedString(j.Object, "status", "completionTime")
		return done != ""
	}
	done := first
	if !complete(first) {
		done = until(t, farewells, 90*time.Second, "the post-delete Job completed", complete)
	}
	env.WaitGone(t, cleanupGVR, ns, "c", 60*time.Second)
	t.Logf("post-delete Job completed at %s, then the object went", done.Object["status"].(map[string]any)["completionTime"])
	cluster.Eventually(t, 60*time.Second, "nothing left of the object", func(ctx context.Context) (bool, error) {
		return !env.Exists(t, configMapGVR, ns, "c-data") && !env.Exists(t, jobGVR, ns, "c-cleanup") && !env.Exists(t, jobGVR, ns, "c-farewell"), nil
	})
}

var certGVR = cluster.GVR("e2e.tmplop.io", "v1", "certs")

// TestChartLookupOrGenerate: a chart that generates a certificate unless
// lookup finds the Secret it wrote converges and then stays still: the
// certificate is generated once, and neither the Secret nor the object is
// written again.
func TestChartLookupOrGenerate(t *testing.T) {
	startKind(t, "testdata/templates/cert")
	ns := env.Namespace(t)
	env.Create(t, certGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Cert\nmetadata:\n  name: api\nspec: {}\n")
	env.WaitReconciled(t, certGVR, ns, "api")
	secretGVR := cluster.GVR("", "v1", "secrets")
	var first *unstructured.Unstructured
	cluster.Eventually(t, 30*time.Second, "the Secret", func(ctx context.Context) (bool, error) {
		s, err := env.Get(ctx, secretGVR, ns, "api-tls")
		first = s
		return err == nil, nil
	})
	time.Sleep(5 * time.Second) // what a loop would write, it writes by now
	secret, err := env.Get(t.Context(), secretGVR, ns, "api-tls")
	if err != nil {
		t.Fatal(err)
	}
	obj, err := env.Get(t.Context(), certGVR, ns, "api")
	if err != nil {
		t.Fatal(err)
	}
	crt, _, _ := unstructured.NestedString(secret.Object, "data", "tls.crt")
	firstCrt, _, _ := unstructured.NestedString(first.Object, "data", "tls.crt")
	if crt == "" || crt != firstCrt {
		t.Errorf("the certificate changed after it was generated")
	}
	time.Sleep(10 * time.Second)
	secret2, err := env.Get(t.Context(), secretGVR, ns, "api-tls")
	if err != nil {
		t.Fatal(err)
	}
	obj2, err := env.Get(t.Context(), certGVR, ns, "api")
	if err != nil {
		t.Fatal(err)
	}
	if secret2.GetResourceVersion() != secret.GetResourceVersion() || obj2.GetResourceVersion() != obj.GetResourceVersion() {
		t.Errorf("written at rest: Secret %s -> %s, Cert %s -> %s", secret.GetResourceVersion(), secret2.GetResourceVersion(),
			obj.GetResourceVersion(), obj2.GetResourceVersion())
	}
	if c := cluster.Condition(obj2, "Ready"); c.Status != "True" {
		t.Errorf("Ready %+v", c)
	}
}

var hookedGVR = cluster.GVR("e2e.tmplop.io", "v1", "hookeds")

// TestChartHookDeletePolicies: a hook-succeeded hook runs, is recorded in
// status.hooks and deleted, and is not created again at rest; a hook with
// no policy (Helm's before-hook-creation) keeps its name and is deleted and
// created anew when it changes, and both run again before the chart's
// resources move to a new version.
func TestChartHookDeletePolicies(t *testing.T) {
	startKind(t, "testdata/templates/hooked")
	ns := env.Namespace(t)
	inits := observe(t, jobGVR, ns, "h-init")
	env.Create(t, hookedGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Hooked\nmetadata:\n  name: h\nspec:\n  version: \"1\"\n")

	ranOnce := func(version string) {
		t.Helper()
		until(t, inits, 90*time.Second, "the init Job of version "+version+" completed", func(j *unstructured.Unstructured) bool {
			done, _, _ := unstructured.NestedString(j.Object, "status", "completionTime")
			return done != "" && strings.Contains(fmt.Sprint(j.Object["spec"]), "init "+version)
		})
		var o *unstructured.Unstructured
		defer func() {
			if t.Failed() && o != nil {
				t.Logf("the Hooked object: %v", o.Object["status"])
			}
		}()
		cluster.Eventually(t, 60*time.Second, "version "+version+" Ready, the init Job recorded and gone", func(ctx context.Context) (bool, error) {
			got, err := env.Get(ctx, hookedGVR, ns, "h")
			if err != nil {
				return false, err
			}
			o = got
			recs, _, _ := unstructured.NestedStringMap(o.Object, "status", "hooks")
			cm, err := env.Get(ctx, configMapGVR, ns, "h-app")
			if err != nil {
				return false, nil
			}
			v, _, _ := unstructured.NestedString(cm.Object, "data", "version")
			return cluster.Condition(o, "Ready").Status == "True" && recs["Job/h-init"] != "" && v == version &&
				!env.Exists(t, jobGVR, ns, "h-init"), nil
		})
	}
	ranOnce("1")
	migrate, err := env.Get(t.Context(), jobGVR, ns, "h-migrate")
	if err != nil {
		t.Fatalf("the migrate Job (no policy) is kept: %v", err)
	}
	// At rest: the init Job is not created again, nothing is written.
	before, err := env.Get(t.Context(), hookedGVR, ns, "h")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(8 * time.Second)
	after, err := env.Get(t.Context(), hookedGVR, ns, "h")
	if err != nil {
		t.Fatal(err)
	}
	if env.Exists(t, jobGVR, ns, "h-init") || after.GetResourceVersion() != before.GetResourceVersion() {
		t.Fatalf("at rest: the init Job came back or the object was written (%s -> %s)", before.GetResourceVersion(), after.GetResourceVersion())
	}

	env.Patch(t, hookedGVR, ns, "h", `{"spec":{"version":"2"}}`)
	ranOnce("2")
	again, err := env.Get(t.Context(), jobGVR, ns, "h-migrate")
	if err != nil {
		t.Fatal(err)
	}
	if again.GetUID() == migrate.GetUID() {
		t.Errorf("the migrate Job of version 2 is the same object as version 1's: not created anew")
	}
	if done, _, _ := unstructured.NestedString(again.Object, "status", "completionTime"); done == "" || !strings.Contains(fmt.Sprint(again.Object["spec"]), "migrate to 2") {
		t.Errorf("the migrate Job of version 2: %v", again.Object["status"])
	}
}

// TestChartRefusesHelmReleaseWithoutOptIn: a chart kind without
// adoptHelmReleases does not take over a Helm release's object of its
// name, not even once the release's owner consents: the object stays as
// Helm made it, and the parent says why.
func TestChartRefusesHelmReleaseWithoutOptIn(t *testing.T) {
	startKind(t, "testdata/templates/hooked")
	ns := env.Namespace(t)
	helmMade := env.Create(t, configMapGVR, ns, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: r-app
  labels: {app.kubernetes.io/managed-by: Helm}
  annotations: {meta.helm.sh/release-name: r, meta.helm.sh/release-namespace: `+ns+`}
data:
  version: "0"
`)
	env.Create(t, hookedGVR, ns, "apiVersion: e2e.tmplop.io/v1\nkind: Hooked\nmetadata:\n  name: r\nspec:\n  version: \"1\"\n")
	env.WaitCondition(t, hookedGVR, ns, "r", "Reconciled", "False", "OwnershipConflict", "ConfigMap", "r-app", "not owned by this Hooked")
	helmMade = env.Patch(t, configMapGVR, ns, "r-app", `{"metadata":{"annotations":{"operator.tmplop.io/parent":"Hooked.e2e.tmplop.io/`+ns+`/r"}}}`)
	env.WaitCondition(t, hookedGVR, ns, "r", "Reconciled", "False", "OwnershipConflict", "ConfigMap", "r-app",
		"does not take over Helm releases", "adoptHelmReleases: true")
	cm, err := env.Get(t.Context(), configMapGVR, ns, "r-app")
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "version"); v != "0" || cm.GetResourceVersion() != helmMade.GetResourceVersion() {
		t.Errorf("Helm's ConfigMap was changed: version %q, resourceVersion %s -> %s", v, helmMade.GetResourceVersion(), cm.GetResourceVersion())
	}
}
