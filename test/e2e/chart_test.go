package e2e

import (
	"context"
	"path/filepath"
	"reflect"
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
// and namespace) are taken over in place by the WebApp of the same name: no
// conflict, the same objects (UIDs), and a Deployment whose spec did not
// change is not rolled (its generation stays).
func TestChartAdoptsHelmRelease(t *testing.T) {
	ns := env.Namespace(t)
	values := map[string]any{"image": map[string]any{"tag": "1.25.0"}, "migration": map[string]any{"enabled": false}}
	installed := map[string]*unstructured.Unstructured{}
	for _, m := range helmInstall(t, filepath.Join(env.RepoRoot(), "templates", "webapp"), "legacy", ns, values) {
		res := map[string]schema.GroupVersionResource{"ConfigMap": configMapGVR, "Deployment": deployGVR, "Service": serviceGVR}[m.GetKind()]
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
