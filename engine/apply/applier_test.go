package apply

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
)

// fakeCache holds objects by key; all holds what the metadata watch sees,
// ours what the watch of our children sees (they may disagree for a while).
// getErr is what Get returns, as the controller's does when it reads a
// child it keeps as a stub and the read fails.
type fakeCache struct {
	all, ours map[Key]*unstructured.Unstructured
	getErr    error
}

func (f *fakeCache) Ensure(context.Context, *meta.RESTMapping) error { return nil }
func (f *fakeCache) Get(_ context.Context, gr schema.GroupResource, ns, name string) (*unstructured.Unstructured, bool, error) {
	if f.getErr != nil {
		return nil, false, f.getErr
	}
	o, ok := f.ours[Key{gr, ns, name}]
	return o, ok, nil
}
func (f *fakeCache) Peek(gr schema.GroupResource, ns, name string) (metav1.Object, bool) {
	o, ok := f.ours[Key{gr, ns, name}]
	return o, ok
}
func (f *fakeCache) Occupant(gr schema.GroupResource, ns, name string) (metav1.Object, bool) {
	o, ok := f.all[Key{gr, ns, name}]
	return o, ok
}
func (f *fakeCache) Children(schema.GroupResource, types.UID) []Child { return nil }
func (f *fakeCache) List(schema.GroupResource) []Child                { return nil }

// partialCache is a sharded replica's: it also answers Missed, from live
// (the API server's view) or with err.
type partialCache struct {
	fakeCache
	live   *unstructured.Unstructured
	err    error
	missed int
}

func (p *partialCache) Missed(context.Context, *meta.RESTMapping, string, string) (*unstructured.Unstructured, error) {
	p.missed++
	return p.live, p.err
}

func testClient() *kube.Client {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "e.io", Version: "v1"}})
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "e.io", Version: "v1", Kind: "P"}, meta.RESTScopeNamespace)
	return kube.NewForClients(kube.Clients{Mapper: m}, "")
}

type resettable struct{ *meta.DefaultRESTMapper }

func (resettable) Reset() {}

func TestPrepare(t *testing.T) {
	parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "P",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "p-uid"}}}
	child := func(ann map[string]any, uid string) *unstructured.Unstructured {
		md := map[string]any{"name": "c", "namespace": "ns", "uid": uid, "resourceVersion": "5"}
		if ann != nil {
			md["annotations"] = ann
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"a": "1"}}}
	}
	mine := map[string]any{ownership.AnnotationParent: "P.e.io/ns/p"}
	key := Key{GR: schema.GroupResource{Resource: "configmaps"}, Namespace: "ns", Name: "c"}
	hashed := func(data string) *unstructured.Unstructured {
		c := child(mine, "u1")
		c.Object["data"] = map[string]any{"a": data}
		ann := c.GetAnnotations()
		ann[ownership.AnnotationHash] = "h1"
		c.SetAnnotations(ann)
		return c
	}
	cases := []struct {
		name       string
		all, ours  *unstructured.Unstructured
		desired    *unstructured.Unstructured
		getErr     error
		wantErr    bool
		wantExists bool
		upToDate   bool
	}{
		{name: "applied before, by any process: the hash says so", all: hashed("1"), ours: hashed("1"), desired: hashed("1"), wantExists: true, upToDate: true},
		{name: "same hash, a rendered field edited since", all: hashed("1"), ours: hashed("edited"), desired: hashed("1"), wantExists: true},
		{name: "free name", wantExists: false},
		{name: "someone else's object", all: child(nil, "u1"), wantErr: true},
		{name: "ours", all: child(mine, "u1"), ours: child(mine, "u1"), wantExists: true},
		{name: "ours, our watch lagging", all: child(mine, "u1"), wantExists: false},
		{name: "gone, our watch lagging", ours: child(mine, "u1"), wantExists: false},
		{name: "replaced by someone else, our watch lagging", all: child(nil, "u2"), ours: child(mine, "u1"), wantErr: true},
		// Get reads a child the cache keeps as a stub from the API server,
		// after the occupant was claimed: what holds the name now is
		// claimed again, never taken over unclaimed.
		{name: "replaced by someone else, read after the claim", all: child(mine, "u1"), ours: child(nil, "u2"), wantErr: true},
		{name: "replaced by another of ours, read after the claim", all: child(mine, "u1"), ours: child(mine, "u2"), wantExists: true},
		{name: "the read fails", all: child(mine, "u1"), ours: child(mine, "u1"), getErr: errors.New("connection refused"), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeCache{all: map[Key]*unstructured.Unstructured{}, ours: map[Key]*unstructured.Unstructured{}, getErr: tc.getErr}
			if tc.all != nil {
				fc.all[key] = tc.all
			}
			if tc.ours != nil {
				fc.ours[key] = tc.ours
			}
			c := testClient()
			m, err := c.Mapping(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
			if err != nil {
				t.Fatal(err)
			}
			a := NewApplier(fc, nil)
			desired := tc.desired
			if desired == nil {
				desired = child(mine, "")
			}
			d, err := a.Prepare(t.Context(), c, m, parent, desired, ownership.Claimant{Manager: "op"})
			if tc.wantErr {
				var ce *ownership.ConflictError
				if !errors.As(err, &ce) && !errors.Is(err, tc.getErr) {
					t.Fatalf("err = %v, want a conflict or the read's error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Exists() != tc.wantExists || d.UpToDate != tc.upToDate {
				t.Fatalf("exists %v up to date %v", d.Exists(), d.UpToDate)
			}
		})
	}
}

// TestPreparePartial: a sharded replica's caches hold only its shard's
// children, so a name they miss is read live and claimed as any other.
func TestPreparePartial(t *testing.T) {
	parent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "P",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "p-uid"}}}
	child := func(parentAnn string, heldBy string) *unstructured.Unstructured {
		md := map[string]any{"name": "c", "namespace": "ns", "uid": "u1", "resourceVersion": "5",
			"labels":      map[string]any{"shard.tmplop.io/held-by": heldBy, ownership.LabelManagedBy: "op"},
			"annotations": map[string]any{ownership.AnnotationParent: parentAnn, ownership.AnnotationHash: "h1"}}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"a": "1"}}}
	}
	cases := []struct {
		name       string
		cached     bool // in the shard's own caches
		live       *unstructured.Unstructured
		err        error
		wantMissed int
		wantErr    bool
		wantExists bool
		upToDate   bool
	}{
		{name: "in the shard's caches: no read", cached: true, wantExists: true, upToDate: true},
		{name: "nowhere: free", wantMissed: 1},
		{name: "this parent's, held by the shard it came from: applied with the new label",
			live: child("P.e.io/ns/p", "old"), wantMissed: 1, wantExists: true},
		{name: "this parent's, already moved to this shard: nothing to write",
			live: child("P.e.io/ns/p", "new"), wantMissed: 1, wantExists: true, upToDate: true},
		{name: "another parent's, on another shard: refused", live: child("P.e.io/ns/other", "old"), wantMissed: 1, wantErr: true},
		{name: "the read fails: an error, nothing applied", err: errors.New("connection refused"), wantMissed: 1, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := Key{GR: schema.GroupResource{Resource: "configmaps"}, Namespace: "ns", Name: "c"}
			pc := &partialCache{fakeCache: fakeCache{all: map[Key]*unstructured.Unstructured{}, ours: map[Key]*unstructured.Unstructured{}},
				live: tc.live, err: tc.err}
			if tc.cached {
				pc.all[key] = child("P.e.io/ns/p", "new")
				pc.ours[key] = child("P.e.io/ns/p", "new")
			}
			c := testClient()
			m, err := c.Mapping(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
			if err != nil {
				t.Fatal(err)
			}
			desired := child("P.e.io/ns/p", "new")
			d, err := NewApplier(pc, nil).Prepare(t.Context(), c, m, parent, desired, ownership.Claimant{Manager: "op"})
			if pc.missed != tc.wantMissed {
				t.Errorf("%d live reads; want %d", pc.missed, tc.wantMissed)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v; want one: %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if d.Exists() != tc.wantExists || d.UpToDate != tc.upToDate {
				t.Errorf("exists %v up to date %v; want %v %v", d.Exists(), d.UpToDate, tc.wantExists, tc.upToDate)
			}
		})
	}
}

// TestOwnEvent: the echo of an apply does not wake the parent, whether it
// arrives after the apply's response or before it; another change does.
func TestOwnEvent(t *testing.T) {
	key := Key{GR: schema.GroupResource{Resource: "configmaps"}, Namespace: "ns", Name: "c"}
	at := func(rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetResourceVersion(rv)
		return u
	}
	var requeued []string
	a := NewApplier(&fakeCache{}, func(u metav1.Object) { requeued = append(requeued, u.GetResourceVersion()) })

	a.own[key] = "7"
	if !a.OwnEvent(key, at("7")) || a.OwnEvent(key, at("8")) {
		t.Fatal("the echo after the response must be dropped once, and the next change routed")
	}

	// During an apply, events are held; Apply's response decides.
	a.inFlight[key] = 1
	if !a.OwnEvent(key, at("9")) {
		t.Fatal("an event during an apply must be held")
	}
	if a.held[key].GetResourceVersion() != "9" {
		t.Fatal("not held")
	}
	if len(requeued) != 0 {
		t.Fatalf("requeued %v", requeued)
	}
}
