package controller

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

// servedBenchApp is a BenchApp as the API server sends it: the object the
// bench creates, with the metadata, managedFields and status the server
// and the writers add. observed is its status.observedGeneration (0: no
// status).
func servedBenchApp(observed int64) *unstructured.Unstructured {
	app := benchapp.New("limit", benchapp.Name(7))
	obj := app.Object
	obj["metadata"] = map[string]any{
		"name": benchapp.Name(7), "namespace": "limit", "uid": "6f1c2a8e-0000-4000-8000-000000000007",
		"resourceVersion": "4711", "generation": int64(3), "creationTimestamp": "2026-01-02T03:04:05Z",
		"labels":      map[string]any{"team": "a"},
		"annotations": map[string]any{"note": "b"},
		"managedFields": []any{map[string]any{
			"manager": "bench", "operation": "Apply", "apiVersion": "bench.tmplop.io/v1",
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{"f:size": map[string]any{}}},
		}},
	}
	obj["spec"] = map[string]any{
		"size": int64(2), "image": "nginx:1.27",
		"ports": []any{
			map[string]any{"port": int64(80), "targetPort": "http"},
			map[string]any{"port": int64(53), "targetPort": int64(5353), "protocol": "UDP"},
			map[string]any{"port": int64(8080)},
		},
	}
	if observed > 0 {
		cond := func(typ, status string) any {
			return map[string]any{"type": typ, "status": status, "reason": "R", "message": "a long message",
				"observedGeneration": observed, "lastTransitionTime": "2026-01-02T03:04:06Z"}
		}
		obj["status"] = map[string]any{
			"observedGeneration": observed,
			"replicas":           int64(0), "readyReplicas": int64(0), "availableReplicas": int64(0),
			"conditions": []any{cond("Reconciled", "True"), cond("Ready", "False"), cond("Reconciling", "False")},
		}
	}
	return app
}

// TestToBenchAppKeepsWhatTheBuildersRead checks that the controller's
// cached form of a BenchApp builds exactly what the full object builds,
// for both kinds: the same Deployment, Service (hash included) and status
// (the kept transition times included), and the same status skip.
func TestToBenchAppKeepsWhatTheBuildersRead(t *testing.T) {
	now := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	for _, tc := range []struct {
		name         string
		observed     int64
		wantUpToDate bool
	}{
		{"no status", 0, false},
		{"status of an older generation", 2, false},
		{"status of its generation", 3, true},
	} {
		for _, k := range benchapp.Kinds {
			t.Run(tc.name+"/"+k.Name, func(t *testing.T) {
				full := servedBenchApp(tc.observed)
				want := map[string]*unstructured.Unstructured{
					"Deployment": benchapp.Deployment(k, full),
					"Service":    benchapp.Service(k, full),
					"status":     benchapp.Status(k, full, now),
				}
				obj, err := toBenchApp(servedBenchApp(tc.observed))
				if err != nil {
					t.Fatal(err)
				}
				app, ok := obj.(*benchApp)
				if !ok {
					t.Fatalf("toBenchApp gave %T, want *benchApp", obj)
				}
				u := app.unstructured()
				got := map[string]*unstructured.Unstructured{
					"Deployment": benchapp.Deployment(k, u),
					"Service":    benchapp.Service(k, u),
					"status":     benchapp.Status(k, u, now),
				}
				for name := range want {
					if !reflect.DeepEqual(got[name].Object, want[name].Object) {
						t.Errorf("%s from the cached form:\n%v\nfrom the full object:\n%v", name, got[name].Object, want[name].Object)
					}
				}
				if app.upToDate() != tc.wantUpToDate {
					t.Errorf("upToDate() = %v, want %v", app.upToDate(), tc.wantUpToDate)
				}
			})
		}
	}
}

// TestToBenchAppDrops checks what the cached form leaves out, that the
// transform is idempotent and passes other objects through, and that its
// deep copy shares nothing.
func TestToBenchAppDrops(t *testing.T) {
	obj, err := toBenchApp(servedBenchApp(3))
	if err != nil {
		t.Fatal(err)
	}
	app := obj.(*benchApp)
	wantMeta := metav1.ObjectMeta{Name: benchapp.Name(7), Namespace: "limit", UID: "6f1c2a8e-0000-4000-8000-000000000007",
		ResourceVersion: "4711", Generation: 3}
	if !reflect.DeepEqual(app.ObjectMeta, wantMeta) {
		t.Errorf("metadata kept: %+v, want only %+v (no labels, annotations, managedFields, timestamps)", app.ObjectMeta, wantMeta)
	}
	wantConds := []appCondition{
		{"Reconciled", "True", "2026-01-02T03:04:06Z"},
		{"Ready", "False", "2026-01-02T03:04:06Z"},
		{"Reconciling", "False", "2026-01-02T03:04:06Z"},
	}
	if !reflect.DeepEqual(app.conditions, wantConds) {
		t.Errorf("conditions kept: %+v, want only type, status and transition time: %+v", app.conditions, wantConds)
	}
	status, _ := app.unstructured().Object["status"].(map[string]any)
	for _, dropped := range []string{"replicas", "readyReplicas", "availableReplicas"} {
		if _, ok := status[dropped]; ok {
			t.Errorf("status.%s kept", dropped)
		}
	}
	if key, err := cache.MetaNamespaceKeyFunc(app); err != nil || key != "limit/"+benchapp.Name(7) {
		t.Errorf("informer key = %q, %v; want limit/%s", key, err, benchapp.Name(7))
	}

	again, err := toBenchApp(app)
	if err != nil || again != any(app) {
		t.Errorf("toBenchApp of a benchApp = %p, %v; want the same %p", again, err, app)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "limit/x", Obj: app}
	if got, err := toBenchApp(tomb); err != nil || !reflect.DeepEqual(got, tomb) {
		t.Errorf("toBenchApp of a tombstone = %v, %v; want it unchanged", got, err)
	}

	cp := app.DeepCopyObject().(*benchApp)
	if !reflect.DeepEqual(cp, app) {
		t.Fatalf("deep copy %+v differs from %+v", cp, app)
	}
	cp.spec["size"] = int64(9)
	cp.conditions[0].Status = "False"
	cp.Name = "other"
	if app.spec["size"] != int64(2) || app.conditions[0].Status != "True" || app.Name != benchapp.Name(7) {
		t.Errorf("deep copy shares state with the original: %+v", app)
	}
	var _ runtime.Object = app
}

// TestStripManagedFields checks that the children's transform drops
// managedFields and nothing else, and may run twice.
func TestStripManagedFields(t *testing.T) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "limit",
			Annotations:   map[string]string{"operator.tmplop.io/hash": "h"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "limit", Operation: metav1.ManagedFieldsOperationApply}}},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(2))},
	}
	want := d.DeepCopy()
	want.ManagedFields = nil
	for range 2 {
		got, err := stripManagedFields(d)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("stripped: %+v, want %+v", got, want)
		}
	}
	if got, err := stripManagedFields("not an object"); err != nil || got != "not an object" {
		t.Errorf("a non-object: %v, %v; want it unchanged", got, err)
	}
}
