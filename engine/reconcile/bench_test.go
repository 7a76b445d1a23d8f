package reconcile

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/status"
)

// liveCache serves children as the cluster would hold them once applied.
type liveCache struct {
	objs map[apply.Key]*unstructured.Unstructured
}

func (c *liveCache) Ensure(context.Context, *meta.RESTMapping) error { return nil }
func (c *liveCache) Get(_ context.Context, gr schema.GroupResource, ns, name string) (*unstructured.Unstructured, bool, error) {
	o, ok := c.objs[apply.Key{GR: gr, Namespace: ns, Name: name}]
	if !ok {
		return nil, false, nil
	}
	return o.DeepCopy(), true, nil // as the compact cache decodes a copy
}
func (c *liveCache) Peek(gr schema.GroupResource, ns, name string) (metav1.Object, bool) {
	return c.Occupant(gr, ns, name)
}
func (c *liveCache) Occupant(gr schema.GroupResource, ns, name string) (metav1.Object, bool) {
	o, ok := c.objs[apply.Key{GR: gr, Namespace: ns, Name: name}]
	return o, ok
}
func (c *liveCache) Children(gr schema.GroupResource, _ types.UID) []apply.Child {
	var out []apply.Child
	for k, o := range c.objs {
		if k.GR == gr {
			out = append(out, o)
		}
	}
	return out
}
func (c *liveCache) List(gr schema.GroupResource) []apply.Child { return c.Children(gr, "") }

type noLookups struct{}

func (noLookups) For(context.Context, *unstructured.Unstructured) (render.Lookup, error) {
	return refuseAll{}, nil
}

type refuseAll struct{}

func (refuseAll) Get(_, _, _, _ string) (map[string]any, error) { return nil, render.ErrLookupRefused }
func (refuseAll) List(_, _, _, _ string) ([]map[string]any, error) {
	return nil, render.ErrLookupRefused
}

type memInventory struct{ kinds []schema.GroupKind }

func (m *memInventory) ChildKinds(context.Context, schema.GroupKind) ([]schema.GroupKind, error) {
	return m.kinds, nil
}
func (m *memInventory) Record(_ context.Context, _ schema.GroupKind, gks []schema.GroupKind) error {
	m.kinds = gks
	return nil
}

type resettable struct{ *meta.DefaultRESTMapper }

func (resettable) Reset() {}

// BenchmarkNoopReconcile is a reconcile of an AppService whose children
// and status already are as rendered: the work a reconcile does when an
// event changed nothing (a duplicate event, a requeue, the first reconcile
// of every object after a restart). It makes no request.
func BenchmarkNoopReconcile(b *testing.B) { benchReconcile(b, false) }

// BenchmarkChildStatusReconcile is a reconcile after the children's status
// changed (a Deployment's replicas came up) and nothing else, the most
// common wake-up of a parent whose children run: the status is found
// unchanged. It makes no request.
func BenchmarkChildStatusReconcile(b *testing.B) { benchReconcile(b, true) }

func benchReconcile(b *testing.B, childStatus bool) {
	k, err := catalog.LoadKind("../../templates/appservice")
	if err != nil {
		b.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}, {Version: "v1"}, k.GVK.GroupVersion()})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace)
	mapper.Add(k.GVK, meta.RESTScopeNamespace)
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	client := kube.NewForClients(kube.Clients{Dynamic: dyn, Mapper: mapper}, "op")

	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`apiVersion: app.example.com/v1
kind: AppService
metadata: {name: web, namespace: ns, uid: u1, generation: 1, resourceVersion: "7"}
spec: {size: 2, image: "nginx:1.27", ports: [{port: 80, targetPort: 80}]}
`), &obj.Object); err != nil {
		b.Fatal(err)
	}
	obj.SetGeneration(1)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cache := &liveCache{objs: map[apply.Key]*unstructured.Unstructured{}}
	r := &Reconciler{Kind: k, Client: client, Applier: apply.NewApplier(cache, nil), Lookups: noLookups{},
		Inventory: &memInventory{}, Recorder: &record.FakeRecorder{}, Manager: "op", Stats: &Stats{}, Now: func() time.Time { return now }}

	// The cluster after the first reconcile: the children as rendered, and
	// the status the first reconcile wrote.
	plan, err := MakePlan(b.Context(), k, obj, render.Input{Lookup: refuseAll{}, Now: now}, catalog.Cluster{}, client.Namespaced, ownership.Policy{Manager: "op"})
	if err != nil {
		b.Fatal(err)
	}
	states := make([]childState, len(plan.Children))
	lives := make([]*unstructured.Unstructured, len(plan.Children))
	for i, c := range plan.Children {
		m, _ := client.Mapping(c.Object.GroupVersionKind())
		live := c.Object.DeepCopy()
		live.SetUID(types.UID("child-" + c.Object.GetKind()))
		live.SetGeneration(1)
		live.SetResourceVersion("1")
		cache.objs[apply.Key{GR: m.Resource.GroupResource(), Namespace: "ns", Name: c.Object.GetName()}] = live
		lives[i] = live
		states[i] = childState{template: c.Template, label: label(live), live: true, health: r.Kind.Health.Check(live)}
	}
	readyConds, ready := readiness(states, nil, false, 1)
	sres, err := k.Templates.Status(b.Context(), render.Input{Object: obj.Object, Children: statusChildren(states, lives), Ready: ready, Lookup: refuseAll{}, Now: now})
	if err != nil {
		b.Fatal(err)
	}
	st, err := status.Desired(obj, sres.Status, append([]metav1.Condition{status.Reconciled(status.ReasonReconciled, "", 1)}, readyConds...), now)
	if err != nil {
		b.Fatal(err)
	}
	obj.Object["status"] = st

	b.ReportAllocs()
	rv := 1
	for b.Loop() {
		if childStatus {
			rv++
			for _, o := range cache.objs {
				o.SetResourceVersion(fmt.Sprint(rv))
			}
		}
		if _, err := r.Reconcile(b.Context(), obj.DeepCopy()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if n := len(dyn.Actions()); n != 0 {
		b.Fatalf("a no-op reconcile made %d requests: %v", n, dyn.Actions())
	}
}
