package migrate_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"

	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/migrate"
	"github.com/tmplop/operator/test/cluster"
)

// The tests run on a control plane of their own (etcd and kube-apiserver),
// started by the first test that needs it.
var plane cluster.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	plane.Stop()
	os.Exit(code)
}

func controlPlane(t *testing.T) *cluster.Cluster {
	t.Helper()
	return plane.Get(t)
}

// crdOf is a CRD of two versions, v1alpha1 and v1, of one schema (the
// conversion None: the test is about storage, not conversion), storage
// at storage.
func crdOf(group, storage string) *apiextensionsv1.CustomResourceDefinition {
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", XPreserveUnknownFields: ptr(true)},
		},
	}}
	var versions []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range []string{"v1alpha1", "v1"} {
		versions = append(versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: v == storage, Schema: schema})
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped, Versions: versions,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// storedAtOld makes the CRD of group with objects objects stored at
// v1alpha1, then moves its storage version to v1: every object is then at
// the old version in etcd, and storedVersions lists both.
func storedAtOld(t *testing.T, env *cluster.Cluster, group string, namespaces []string, objects int) (schema.GroupVersionResource, string) {
	t.Helper()
	ctx := context.Background()
	ext := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	crd := crdOf(group, "v1alpha1")
	if _, err := ext.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ext.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}) })
	gvr := schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "widgets"}
	cluster.Eventually(t, 30*time.Second, "CRD served", func(ctx context.Context) (bool, error) {
		_, err := env.Resource(gvr, namespaces[0]).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	for i := range objects {
		ns := namespaces[i%len(namespaces)]
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1alpha1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w-%04d", i)},
			"spec":     map[string]any{"size": int64(i)},
		}}
		if _, err := env.Resource(gvr, ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	live, err := ext.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.Spec.Versions = crdOf(group, "v1").Spec.Versions
	if _, err := ext.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 30*time.Second, "storedVersions lists both", func(ctx context.Context) (bool, error) {
		c, err := ext.Get(ctx, crd.Name, metav1.GetOptions{})
		return err == nil && slices.Equal(c.Status.StoredVersions, []string{"v1alpha1", "v1"}), err
	})
	return gvr, crd.Name
}

// versions are the resourceVersions of every object of gvr.
func versions(t *testing.T, env *cluster.Cluster, gvr schema.GroupVersionResource) map[string]string {
	t.Helper()
	list, err := env.Resource(gvr, "").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range list.Items {
		out[o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
	}
	return out
}

type counter struct {
	written atomic.Int64
	runs    sync.Map
	after   int64
	stop    func()
}

func (c *counter) ObserveMigrated(_ string, n int) {
	if c.written.Add(int64(n)) == c.after && c.stop != nil {
		c.stop()
	}
}
func (c *counter) ObserveRun(_, result string) { c.runs.Store(result, true) }

// TestMigrate: every object stored at the old version is written back
// once, storedVersions is pruned to the storage version, the condition and
// Events say so, and a second run writes nothing (the API server does not
// write an object already at the storage version).
func TestMigrate(t *testing.T) {
	env := controlPlane(t)
	nss := []string{env.Namespace(t), env.Namespace(t)}
	gvr, crdName := storedAtOld(t, env, "migrate.example.com", nss, 230)
	before := versions(t, env, gvr)

	client, err := kube.New(env.Config, "operator-test")
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(100)
	obs := &counter{}
	m := migrate.New(client, rec, 1000, obs)
	res, err := m.Migrate(context.Background(), crdName)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Needed || res.Written != 230 || res.Skipped != 0 || obs.written.Load() != 230 {
		t.Errorf("result %+v, observed %d: want 230 written", res, obs.written.Load())
	}
	after := versions(t, env, gvr)
	for key, rv := range before {
		if after[key] == rv {
			t.Errorf("%s not written back (resourceVersion %s)", key, rv)
		}
	}
	crd, err := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(crd.Status.StoredVersions, []string{"v1"}) {
		t.Errorf("storedVersions = %v, want [v1]", crd.Status.StoredVersions)
	}
	if _, ok := crd.Annotations[migrate.Annotation]; ok {
		t.Errorf("progress annotation left: %s", crd.Annotations[migrate.Annotation])
	}
	if c := condition(crd, migrate.ConditionType); c == nil || c.Status != apiextensionsv1.ConditionTrue || c.Reason != migrate.ReasonMigrated {
		t.Errorf("condition %s = %+v, want True/%s", migrate.ConditionType, c, migrate.ReasonMigrated)
	}
	if c := condition(crd, apiextensionsv1.Established); c == nil || c.Status != apiextensionsv1.ConditionTrue {
		t.Errorf("the API server's Established condition lost: %+v", crd.Status.Conditions)
	}
	events := drain(rec)
	if !slices.ContainsFunc(events, func(e string) bool { return contains(e, "Normal Migrated") && contains(e, "230 written") }) {
		t.Errorf("no Migrated Event: %q", events)
	}

	// Again: nothing to do, nothing written.
	res, err = m.Migrate(context.Background(), crdName)
	if err != nil || res.Needed || res.Written != 0 {
		t.Errorf("second run: %+v, %v: want nothing needed", res, err)
	}
	if again := versions(t, env, gvr); !maps.Equal(again, after) {
		t.Error("second run changed objects")
	}
}

// TestMigrateResumes: a migration stopped half way (the operator stopped)
// goes on after the last object it wrote: every object is written back
// exactly once over the two runs.
func TestMigrateResumes(t *testing.T) {
	env := controlPlane(t)
	nss := []string{env.Namespace(t)}
	gvr, crdName := storedAtOld(t, env, "resume.example.com", nss, 350)
	before := versions(t, env, gvr)
	client, err := kube.New(env.Config, "operator-test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	obs := &counter{after: 240, stop: cancel}
	first, err := migrate.New(client, record.NewFakeRecorder(100), 1000, obs).Migrate(ctx, crdName)
	if err == nil {
		t.Fatal("the stopped run returned no error")
	}
	crd, err := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crd.Annotations[migrate.Annotation] == "" || len(crd.Status.StoredVersions) != 2 {
		t.Fatalf("after the stop: annotation %q, storedVersions %v", crd.Annotations[migrate.Annotation], crd.Status.StoredVersions)
	}
	mid := versions(t, env, gvr)
	second, err := migrate.New(client, record.NewFakeRecorder(100), 1000, nil).Migrate(context.Background(), crdName)
	if err != nil {
		t.Fatal(err)
	}
	after := versions(t, env, gvr)
	// Written by the first run: changed before mid. The second run may
	// write again at most the objects after the last progress saved
	// (every 100), never one before it.
	again := 0
	for key := range before {
		switch {
		case after[key] == before[key]:
			t.Errorf("%s never written back", key)
		case mid[key] != before[key] && after[key] != mid[key]:
			again++
		}
	}
	if again > 100 {
		t.Errorf("%d objects written by both runs: the second did not resume", again)
	}
	t.Logf("first run %d written before the stop, second %d, %d written twice", first.Written, second.Written, again)
	crd, err = apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(crd.Status.StoredVersions, []string{"v1"}) {
		t.Errorf("storedVersions = %v, want [v1]", crd.Status.StoredVersions)
	}
}

func condition(crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == typ {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
