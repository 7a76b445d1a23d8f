package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/hack/bench/internal/benchapp"
)

// What the hand-written controller caches. Its informers hold every
// object of the namespace for as long as it runs, so it keeps of each only
// what it reads, as kube-controller-manager's garbage collector does with
// metadata-only informers and as controller-runtime's
// cache.TransformStripManagedFields does for managedFields:
//
//   - the Deployments and Services (typed): without managedFields, which
//     nothing reads and which are the larger part of a small object's
//     metadata. The rest is kept: a controller for this kind would read
//     the Deployment's status for its own (the operator does; the limit's
//     status is fixed because nothing runs the Pods here).
//   - the BenchApps (a CRD, so unstructured maps decoded from JSON): a
//     benchApp, the few fields the builders and the skips read. An
//     unstructured object is a tree of maps, several hundred bytes a map;
//     its metadata, managedFields and status alone are most of it.

// benchApp is a BenchApp as the controller's cache holds it: its name,
// namespace, UID, resourceVersion and generation, the spec as it is (what
// benchapp.Deployment and benchapp.Service read), status.observedGeneration
// (the status skip) and each condition's type, status and transition time
// (what benchapp.Status keeps). Everything else (labels, annotations,
// managedFields, timestamps, the conditions' messages, the replica counts)
// is dropped.
//
// It embeds ObjectMeta so that the informer's key function and
// cache.ObjectToName take it as any object, and is a runtime.Object so that
// whatever in client-go asks for one gets it.
type benchApp struct {
	metav1.ObjectMeta
	// spec is spec as decoded; never written to (the builders copy).
	spec map[string]any
	// observed is whether status.observedGeneration is set, and
	// observedGeneration its value.
	observed           bool
	observedGeneration int64
	conditions         []appCondition
}

// appCondition is what benchapp.Status reads of a status condition.
type appCondition struct {
	Type, Status, LastTransitionTime string
}

// upToDate reports whether the status is of the current generation.
func (a *benchApp) upToDate() bool {
	return a.observed && a.observedGeneration == a.Generation
}

// unstructured is a as the limit's builders take it. The maps are new;
// spec is shared, which is safe because the builders deep-copy what they
// read of it (unstructured.Nested*).
func (a *benchApp) unstructured() *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": benchapp.GVR.GroupVersion().String(),
		"kind":       "BenchApp",
		"metadata": map[string]any{
			"name": a.Name, "namespace": a.Namespace, "uid": string(a.UID),
			"resourceVersion": a.ResourceVersion, "generation": a.Generation,
		},
	}
	if a.spec != nil {
		obj["spec"] = a.spec
	}
	status := map[string]any{}
	if a.observed {
		status["observedGeneration"] = a.observedGeneration
	}
	if len(a.conditions) > 0 {
		conds := make([]any, len(a.conditions))
		for i, c := range a.conditions {
			conds[i] = map[string]any{"type": c.Type, "status": c.Status, "lastTransitionTime": c.LastTransitionTime}
		}
		status["conditions"] = conds
	}
	if len(status) > 0 {
		obj["status"] = status
	}
	return &unstructured.Unstructured{Object: obj}
}

// GetObjectKind is runtime.Object's: the cache does not keep the kind.
func (a *benchApp) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject is runtime.Object's.
func (a *benchApp) DeepCopyObject() runtime.Object {
	c := &benchApp{observed: a.observed, observedGeneration: a.observedGeneration}
	a.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	if a.spec != nil {
		c.spec = runtime.DeepCopyJSON(a.spec)
	}
	c.conditions = append([]appCondition(nil), a.conditions...)
	return c
}

// toBenchApp is the BenchApp informer's transform: an unstructured BenchApp
// becomes a benchApp. It is idempotent (a benchApp passes as it is), as
// client-go asks of a transform, and passes anything else unchanged (a
// tombstone is not transformed by the informer).
func toBenchApp(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	a := &benchApp{ObjectMeta: metav1.ObjectMeta{
		Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
		ResourceVersion: u.GetResourceVersion(), Generation: u.GetGeneration(),
	}}
	// The decoded object is the informer's, not shared: the spec is taken,
	// not copied.
	if spec, ok := u.Object["spec"].(map[string]any); ok {
		a.spec = spec
	}
	status, _ := u.Object["status"].(map[string]any)
	if g, found, err := unstructured.NestedInt64(status, "observedGeneration"); err == nil && found {
		a.observed, a.observedGeneration = true, g
	}
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		c, ok := c.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := c["type"].(string)
		st, _ := c["status"].(string)
		t, _ := c["lastTransitionTime"].(string)
		a.conditions = append(a.conditions, appCondition{Type: typ, Status: st, LastTransitionTime: t})
	}
	return a, nil
}

// stripManagedFields is the child informers' transform: it drops
// managedFields before an object is cached, in place (client-go hands the
// transform an object no one else holds). Idempotent.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
