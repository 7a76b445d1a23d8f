package apply

import (
	"maps"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/tmplop/operator/engine/ownership"
)

// labelled is an object of kind in namespace ns with exactly these labels
// and no owner: what pruning must tell apart by its labels alone.
func labelled(kind, ns, name string, labels map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name, "namespace": ns}
	if labels != nil {
		md["labels"] = labels
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": md}}
}

func (f *fakeAPI) pruneScope() []*meta.RESTMapping {
	return []*meta.RESTMapping{
		f.mapping(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}),
		f.mapping(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}),
	}
}

func names(keys []Key) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.String())
	}
	slices.Sort(out)
	return out
}

// TestPruneOnFakes: the children of a parent are the objects that carry
// both the operator's managed-by label and the parent's UID label, over
// every resource of the prune scope; Delete deletes exactly those it is
// given, each under its UID as a precondition, in the background. Any
// other object, whatever else it shares with them, stays.
func TestPruneOnFakes(t *testing.T) {
	ours := map[string]any{ownership.LabelManagedBy: testManager, ownership.LabelParentUID: "p-uid"}
	keep := rendered(t, "keep", map[string]any{"a": "1"})
	keep.SetNamespace("ns")
	old := rendered(t, "old", map[string]any{"a": "1"})
	old.SetNamespace("ns")
	f := newFakeAPI(t,
		keep, old,
		labelled("Secret", "ns", "old-secret", ours),
		labelled("ConfigMap", "ns", "other-parent", map[string]any{ownership.LabelManagedBy: testManager, ownership.LabelParentUID: "other-uid"}),
		labelled("ConfigMap", "ns", "other-manager", map[string]any{ownership.LabelManagedBy: "someone", ownership.LabelParentUID: "p-uid"}),
		labelled("ConfigMap", "ns", "no-manager", map[string]any{ownership.LabelParentUID: "p-uid"}),
		labelled("ConfigMap", "ns", "no-parent", map[string]any{ownership.LabelManagedBy: testManager}),
		labelled("ConfigMap", "ns", "unlabelled", nil),
		labelled("Secret", "other", "elsewhere", map[string]any{ownership.LabelManagedBy: "someone", ownership.LabelParentUID: "p-uid"}),
	)
	cache := f.cache()
	a := NewApplier(cache, nil)
	c := f.kube()

	owned, err := a.Owned(t.Context(), c, f.pruneScope(), "p-uid")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(slices.Collect(maps.Keys(owned))), []string{"configmaps ns/keep", "configmaps ns/old", "secrets ns/old-secret"}; !slices.Equal(got, want) {
		t.Fatalf("Owned = %v, want %v", got, want)
	}
	if !cache.ensured[configMaps.GroupResource()] || !cache.ensured[secrets.GroupResource()] {
		t.Errorf("Owned read a resource whose watch it did not ensure: %v", cache.ensured)
	}

	// The reconciler prunes what it did not render this time.
	delete(owned, Key{GR: configMaps.GroupResource(), Namespace: "ns", Name: "keep"})
	uids := map[string]string{}
	for k, o := range owned {
		uids[k.Name] = string(o.GetUID())
	}
	deleted, err := a.Delete(t.Context(), c, owned)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(deleted), []string{"configmaps ns/old", "secrets ns/old-secret"}; !slices.Equal(got, want) {
		t.Errorf("deleted %v, want %v", got, want)
	}
	deletes := f.actions("delete")
	if len(deletes) != 2 {
		t.Fatalf("%d delete requests, want 2", len(deletes))
	}
	for _, d := range deletes {
		d := d.(clienttesting.DeleteActionImpl)
		o := d.DeleteOptions
		if o.Preconditions == nil || o.Preconditions.UID == nil || string(*o.Preconditions.UID) != uids[d.GetName()] {
			t.Errorf("delete of %s without the UID precondition %s: %+v", d.GetName(), uids[d.GetName()], o.Preconditions)
		}
		if o.PropagationPolicy == nil || *o.PropagationPolicy != metav1.DeletePropagationBackground {
			t.Errorf("delete of %s: propagation %v, want Background", d.GetName(), o.PropagationPolicy)
		}
	}
	for _, gone := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{configMaps, "old"}, {secrets, "old-secret"}} {
		if f.get(gone.gvr, "ns", gone.name) != nil {
			t.Errorf("%s %s was not deleted", gone.gvr.Resource, gone.name)
		}
	}
	for _, name := range []string{"keep", "other-parent", "other-manager", "no-manager", "no-parent", "unlabelled"} {
		if f.get(configMaps, "ns", name) == nil {
			t.Errorf("ConfigMap %s was deleted", name)
		}
	}
	if f.get(secrets, "other", "elsewhere") == nil {
		t.Error("Secret other/elsewhere was deleted")
	}
}

// TestPruneRecreated: a child deleted and made again under its name after
// the cache listed it is left alone (the UID precondition fails, and the
// error names it); one already gone is no error.
func TestPruneRecreated(t *testing.T) {
	old := rendered(t, "old", map[string]any{"a": "1"})
	old.SetNamespace("ns")
	gone := rendered(t, "gone", map[string]any{"a": "1"})
	gone.SetNamespace("ns")
	f := newFakeAPI(t, old, gone)
	a := NewApplier(f.cache(), nil)
	c := f.kube()
	owned, err := a.Owned(t.Context(), c, f.pruneScope(), "p-uid")
	if err != nil {
		t.Fatal(err)
	}
	if len(owned) != 2 {
		t.Fatalf("Owned = %v, want old and gone", names(slices.Collect(maps.Keys(owned))))
	}
	// Meanwhile someone deletes both, and makes "old" again.
	for _, name := range []string{"old", "gone"} {
		if err := f.client.Tracker().Delete(configMaps, "ns", name); err != nil {
			t.Fatal(err)
		}
	}
	f.put(labelled("ConfigMap", "ns", "old", map[string]any{"app": "theirs"}))

	deleted, err := a.Delete(t.Context(), c, owned)
	if err == nil || !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "prune configmaps ns/old") {
		t.Fatalf("Delete: %v, want a Conflict naming configmaps ns/old", err)
	}
	if got := names(deleted); !slices.Equal(got, []string{"configmaps ns/gone"}) {
		t.Errorf("deleted %v, want only the one already gone", got)
	}
	if o := f.get(configMaps, "ns", "old"); o == nil || o.GetLabels()["app"] != "theirs" {
		t.Errorf("the object made again under the name was deleted or changed: %v", o)
	}
}

// TestUnowned: the orphan sweep lists the operator's children that no
// controller owns (those outside their parent's namespace), whatever
// their parent; owned children and other managers' objects are not listed.
func TestUnowned(t *testing.T) {
	inside := rendered(t, "inside", map[string]any{"a": "1"})
	inside.SetNamespace("ns")
	f := newFakeAPI(t,
		inside,
		labelled("ConfigMap", "elsewhere", "outside", map[string]any{ownership.LabelManagedBy: testManager, ownership.LabelParentUID: "p-uid"}),
		labelled("Secret", "elsewhere", "outside-other", map[string]any{ownership.LabelManagedBy: testManager, ownership.LabelParentUID: "gone-uid"}),
		labelled("ConfigMap", "elsewhere", "not-ours", map[string]any{ownership.LabelManagedBy: "someone", ownership.LabelParentUID: "p-uid"}),
	)
	a := NewApplier(f.cache(), nil)
	unowned, err := a.Unowned(t.Context(), f.kube(), f.pruneScope())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(slices.Collect(maps.Keys(unowned))), []string{"configmaps elsewhere/outside", "secrets elsewhere/outside-other"}; !slices.Equal(got, want) {
		t.Errorf("Unowned = %v, want %v", got, want)
	}
	if n := len(f.client.Actions()); n != 0 {
		t.Errorf("%d requests to list from the caches, want 0", n)
	}
}
