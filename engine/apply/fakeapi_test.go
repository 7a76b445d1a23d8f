package apply

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
)

// fakeAPI is an API server for the applier's unit tests: the object
// tracker of k8s.io/client-go/dynamic/fake behind reactors that do what the
// applier relies on the real one for, and nothing more:
//
//   - server-side apply creates the object or merges the body into it (the
//     applied fields win, as with Force), and a metadata.uid in the body is
//     a precondition: an object of another UID, or none, refuses the apply
//     with a Conflict, as the API server's patch handler does;
//   - delete honours DeleteOptions.Preconditions.UID (a Conflict otherwise);
//   - every write gets a new resourceVersion.
//
// Its cache (an apply.Cache) holds what the controller's watches of a
// resource would: every object for Occupant, the ones labelled managed-by
// this manager as "ours", indexed by the parent-UID label for Children.
type fakeAPI struct {
	t      *testing.T
	client *dynamicfake.FakeDynamicClient
	mapper *meta.DefaultRESTMapper
	rv     int
	// failApply fails the apply of each name it holds with its error.
	failApply map[string]error
}

const testManager = "op"

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

func newFakeAPI(t *testing.T, objects ...*unstructured.Unstructured) *fakeAPI {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "e.io", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "e.io", Version: "v1", Kind: "P"}, meta.RESTScopeNamespace)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		configMaps: "ConfigMapList", secrets: "SecretList",
	})
	f := &fakeAPI{t: t, client: client, mapper: mapper, failApply: map[string]error{}}
	client.PrependReactor("patch", "*", f.apply)
	client.PrependReactor("delete", "*", f.delete)
	for _, o := range objects {
		f.put(o)
	}
	return f
}

// kube is a kube.Client over the fakes, as the reconciler's.
func (f *fakeAPI) kube() *kube.Client {
	return kube.NewForClients(kube.Clients{Dynamic: f.client, Mapper: f.mapper}, testManager)
}

func (f *fakeAPI) mapping(gvk schema.GroupVersionKind) *meta.RESTMapping {
	f.t.Helper()
	m, err := f.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

// put stores o as someone else's write would: a UID of its own unless it
// has one, and a new resourceVersion.
func (f *fakeAPI) put(o *unstructured.Unstructured) *unstructured.Unstructured {
	f.t.Helper()
	o = o.DeepCopy()
	f.rv++
	if o.GetUID() == "" {
		o.SetUID(types.UID(fmt.Sprintf("uid-%s-%d", o.GetName(), f.rv)))
	}
	o.SetResourceVersion(strconv.Itoa(f.rv))
	gvr := f.mapping(o.GroupVersionKind()).Resource
	tracker := f.client.Tracker()
	err := tracker.Create(gvr, o, o.GetNamespace())
	if apierrors.IsAlreadyExists(err) {
		err = tracker.Update(gvr, o, o.GetNamespace())
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return o
}

// get is the object as the fake API server holds it, nil when there is none.
func (f *fakeAPI) get(gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	f.t.Helper()
	o, err := f.client.Tracker().Get(gvr, ns, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return o.(*unstructured.Unstructured)
}

// actions are the requests of verb sent so far (the cache reads none).
func (f *fakeAPI) actions(verb string) []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() == verb {
			out = append(out, a)
		}
	}
	return out
}

func (f *fakeAPI) apply(action clienttesting.Action) (bool, runtime.Object, error) {
	p, ok := action.(clienttesting.PatchActionImpl)
	if !ok || p.GetPatchType() != types.ApplyPatchType {
		f.t.Errorf("%s: the applier writes with server-side apply only", action)
		return true, nil, fmt.Errorf("unexpected %s", action)
	}
	if o := p.PatchOptions; o.FieldManager != testManager || o.Force == nil || !*o.Force {
		f.t.Errorf("apply of %s with options %+v: want field manager %q and force", p.GetName(), o, testManager)
	}
	if err := f.failApply[p.GetName()]; err != nil {
		return true, nil, err
	}
	body := &unstructured.Unstructured{}
	if err := body.UnmarshalJSON(p.GetPatch()); err != nil {
		f.t.Fatalf("apply body: %v", err)
	}
	gvr, ns, name := p.GetResource(), p.GetNamespace(), p.GetName()
	tracker := f.client.Tracker()
	cur, err := tracker.Get(gvr, ns, name)
	if apierrors.IsNotFound(err) {
		if uid := body.GetUID(); uid != "" {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), name,
				fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", uid))
		}
		f.rv++
		body.SetUID(types.UID(fmt.Sprintf("uid-%s-%d", name, f.rv)))
		body.SetResourceVersion(strconv.Itoa(f.rv))
		return true, body, tracker.Create(gvr, body, ns)
	}
	if err != nil {
		return true, nil, err
	}
	live := cur.(*unstructured.Unstructured)
	if uid := body.GetUID(); uid != "" && uid != live.GetUID() {
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), name,
			fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, live.GetUID()))
	}
	merged := live.DeepCopy()
	mergeApplied(merged.Object, body.Object)
	f.rv++
	merged.SetUID(live.GetUID())
	merged.SetResourceVersion(strconv.Itoa(f.rv))
	return true, merged, tracker.Update(gvr, merged, ns)
}

// mergeApplied sets every field of applied in live: maps merge, anything
// else is replaced. Fields only live has stay (another manager's).
func mergeApplied(live, applied map[string]any) {
	for k, v := range applied {
		if m, ok := v.(map[string]any); ok {
			if l, ok := live[k].(map[string]any); ok {
				mergeApplied(l, m)
				continue
			}
		}
		live[k] = v
	}
}

func (f *fakeAPI) delete(action clienttesting.Action) (bool, runtime.Object, error) {
	d := action.(clienttesting.DeleteActionImpl)
	gvr, ns, name := d.GetResource(), d.GetNamespace(), d.GetName()
	cur, err := f.client.Tracker().Get(gvr, ns, name)
	if err != nil {
		return true, nil, err
	}
	uid := cur.(*unstructured.Unstructured).GetUID()
	if pre := d.DeleteOptions.Preconditions; pre != nil && pre.UID != nil && *pre.UID != uid {
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), name,
			fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", *pre.UID, uid))
	}
	return true, nil, f.client.Tracker().Delete(gvr, ns, name)
}

// cache is the apply.Cache of f: watches always in sync with it.
func (f *fakeAPI) cache() *fakeWatches {
	return &fakeWatches{api: f, ensured: map[schema.GroupResource]bool{}}
}

type fakeWatches struct {
	api     *fakeAPI
	ensured map[schema.GroupResource]bool
}

var _ Cache = (*fakeWatches)(nil)

func (w *fakeWatches) Ensure(_ context.Context, m *meta.RESTMapping) error {
	w.ensured[m.Resource.GroupResource()] = true
	return nil
}

// objects are the objects of gr that match selector, as a watch selected
// on the server holds them.
func (w *fakeWatches) objects(gr schema.GroupResource, selector string) []*unstructured.Unstructured {
	t := w.api.t
	t.Helper()
	if !w.ensured[gr] {
		t.Errorf("%s read before its watch was ensured", gr)
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	gvr := gr.WithVersion("v1")
	gvk, err := w.api.mapper.KindFor(gvr)
	if err != nil {
		t.Fatal(err)
	}
	list, err := w.api.client.Tracker().List(gvr, gvk, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, o := range list.(*unstructured.UnstructuredList).Items {
		if sel.Matches(labels.Set(o.GetLabels())) {
			out = append(out, o.DeepCopy())
		}
	}
	return out
}

// ours is what the watch of the operator's children holds.
func (w *fakeWatches) ours(gr schema.GroupResource) []*unstructured.Unstructured {
	return w.objects(gr, ownership.ManagedSelector(testManager))
}

func find(objs []*unstructured.Unstructured, ns, name string) (*unstructured.Unstructured, bool) {
	for _, o := range objs {
		if o.GetNamespace() == ns && o.GetName() == name {
			return o, true
		}
	}
	return nil, false
}

func (w *fakeWatches) Get(_ context.Context, gr schema.GroupResource, ns, name string) (*unstructured.Unstructured, bool, error) {
	o, ok := find(w.ours(gr), ns, name)
	return o, ok, nil
}

func (w *fakeWatches) Peek(gr schema.GroupResource, ns, name string) (metav1.Object, bool) {
	return find(w.ours(gr), ns, name)
}

func (w *fakeWatches) Occupant(gr schema.GroupResource, ns, name string) (metav1.Object, bool) {
	return find(w.objects(gr, ""), ns, name)
}

// Children is the operator's children of gr by the parent-UID label, as
// the controller's index of that watch serves them.
func (w *fakeWatches) Children(gr schema.GroupResource, parentUID types.UID) []Child {
	var out []Child
	for _, o := range w.ours(gr) {
		if o.GetLabels()[ownership.LabelParentUID] == string(parentUID) {
			out = append(out, o)
		}
	}
	return out
}

func (w *fakeWatches) List(gr schema.GroupResource) []Child {
	var out []Child
	for _, o := range w.ours(gr) {
		out = append(out, o)
	}
	return out
}
