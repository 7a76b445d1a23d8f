package apply

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clienttesting "k8s.io/client-go/testing"

	"github.com/tmplop/operator/engine/ownership"
)

// testParent is the parent of every child of these tests.
func testParent() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "P",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "p-uid"}}}
}

// rendered is the ConfigMap name with data as a template renders it and
// the reconciler adopts it: labels, annotations, owner reference, hash.
func rendered(t *testing.T, name string, data map[string]any) *unstructured.Unstructured {
	t.Helper()
	c := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name}, "data": data}}
	if _, err := ownership.Adopt(testParent(), c, true, "configmap.yaml", ownership.Policy{Manager: testManager}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestApplyOnFakes: what Prepare and Apply send to an API server, on
// dynamicfake: a new or changed child is server-side applied with the
// operator's field manager and force; an update carries the live UID as a
// precondition; a child the cluster already holds as rendered costs no
// request; an object someone else holds under the name is never written.
func TestApplyOnFakes(t *testing.T) {
	want := map[string]any{"a": "1"}
	cases := []struct {
		name string
		// live is what the cluster holds before; race changes it between
		// Prepare and Apply, as another client would.
		live func(t *testing.T) *unstructured.Unstructured
		race func(f *fakeAPI)
		// applies is the number of apply requests; uid whether the body
		// carries the live UID; skipped is Outcome.Skipped.
		applies  int
		uid      bool
		skipped  bool
		conflict bool // Prepare refuses: the name is someone else's
		wantErr  string
	}{
		{name: "a new child is created", applies: 1},
		{name: "a child the cluster holds as rendered is skipped",
			live: func(t *testing.T) *unstructured.Unstructured { return rendered(t, "c", want) }, skipped: true},
		{name: "a child edited since is applied again, under its UID",
			live: func(t *testing.T) *unstructured.Unstructured {
				c := rendered(t, "c", want)
				c.Object["data"] = map[string]any{"a": "edited"}
				return c
			}, applies: 1, uid: true},
		{name: "a child rendered differently before is applied, under its UID",
			live:    func(t *testing.T) *unstructured.Unstructured { return rendered(t, "c", map[string]any{"a": "0"}) },
			applies: 1, uid: true},
		{name: "a child deleted and made again by someone else meanwhile is refused",
			live: func(t *testing.T) *unstructured.Unstructured { return rendered(t, "c", map[string]any{"a": "0"}) },
			race: func(f *fakeAPI) {
				f.put(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": "c", "namespace": "ns", "uid": "uid-newcomer"},
					"data":     map[string]any{"a": "theirs"}}})
			},
			applies: 1, uid: true, wantErr: "Precondition failed: UID"},
		{name: "someone else's object under the name is not written",
			live: func(t *testing.T) *unstructured.Unstructured {
				return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": "c"}, "data": map[string]any{"a": "theirs"}}}
			}, conflict: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			var live *unstructured.Unstructured
			if tc.live != nil {
				l := tc.live(t)
				l.SetNamespace("ns")
				live = f.put(l)
			}
			a := NewApplier(f.cache(), nil)
			desired := rendered(t, "c", want)
			desired.SetNamespace("ns")
			m := f.mapping(desired.GroupVersionKind())
			d, err := a.Prepare(t.Context(), f.kube(), m, testParent(), desired, ownership.Claimant{Manager: testManager})
			if tc.conflict {
				if !IsConflict(err) {
					t.Fatalf("Prepare: %v, want an ownership conflict", err)
				}
				if got := f.get(configMaps, "ns", "c"); got.Object["data"].(map[string]any)["a"] != "theirs" {
					t.Errorf("their object was changed: %v", got.Object["data"])
				}
			} else {
				if err != nil {
					t.Fatalf("Prepare: %v", err)
				}
				if tc.race != nil {
					tc.race(f)
				}
				out, err := a.Apply(t.Context(), f.kube(), d)
				switch {
				case tc.wantErr == "" && err != nil:
					t.Fatalf("Apply: %v", err)
				case tc.wantErr != "":
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !apierrors.IsConflict(errors.Unwrap(err)) {
						t.Fatalf("Apply: %v, want a Conflict with %q", err, tc.wantErr)
					}
					if got := f.get(configMaps, "ns", "c"); got.GetUID() != "uid-newcomer" || got.Object["data"].(map[string]any)["a"] != "theirs" {
						t.Errorf("the newcomer was written: %v", got.Object)
					}
				default:
					if out.Skipped != tc.skipped {
						t.Errorf("Skipped = %v, want %v", out.Skipped, tc.skipped)
					}
					got := f.get(configMaps, "ns", "c")
					if !Contains(got.Object, desired.Object) {
						t.Errorf("the cluster holds %v, want it to hold %v", got.Object, desired.Object)
					}
					if out.Live == nil || out.Live.GetResourceVersion() != got.GetResourceVersion() {
						t.Errorf("Outcome.Live is not the object as stored")
					}
				}
			}
			applies := f.actions("patch")
			if len(applies) != tc.applies {
				t.Fatalf("%d apply requests, want %d", len(applies), tc.applies)
			}
			for _, p := range applies {
				body := &unstructured.Unstructured{}
				if err := body.UnmarshalJSON(p.(clienttesting.PatchActionImpl).GetPatch()); err != nil {
					t.Fatal(err)
				}
				switch uid := body.GetUID(); {
				case tc.uid && (live == nil || uid != live.GetUID()):
					t.Errorf("apply body uid %q, want the live object's %q", uid, live.GetUID())
				case !tc.uid && uid != "":
					t.Errorf("apply body of a new child carries uid %q", uid)
				}
			}
		})
	}
}

// TestApplyUpToDateAfterApply: what one reconcile applied, the next finds
// up to date, and writes nothing: at rest the operator sends no request.
func TestApplyUpToDateAfterApply(t *testing.T) {
	f := newFakeAPI(t)
	a := NewApplier(f.cache(), nil)
	desired := rendered(t, "c", map[string]any{"a": "1"})
	desired.SetNamespace("ns")
	m := f.mapping(desired.GroupVersionKind())
	for i, wantSkipped := range []bool{false, true, true} {
		d, err := a.Prepare(t.Context(), f.kube(), m, testParent(), desired.DeepCopy(), ownership.Claimant{Manager: testManager})
		if err != nil {
			t.Fatal(err)
		}
		out, err := a.Apply(t.Context(), f.kube(), d)
		if err != nil {
			t.Fatal(err)
		}
		if out.Skipped != wantSkipped {
			t.Errorf("reconcile %d: Skipped = %v, want %v", i+1, out.Skipped, wantSkipped)
		}
	}
	if n := len(f.actions("patch")); n != 1 {
		t.Errorf("%d apply requests over three reconciles, want 1", n)
	}
	// The echo of the one write does not wake the parent; a later change does.
	key := Key{GR: configMaps.GroupResource(), Namespace: "ns", Name: "c"}
	live := f.get(configMaps, "ns", "c")
	if !a.OwnEvent(key, live) {
		t.Error("the watch event of our own apply woke the parent")
	}
	live.SetResourceVersion(live.GetResourceVersion() + "0")
	if a.OwnEvent(key, live) {
		t.Error("a change after our apply did not wake the parent")
	}
}

// TestApplyFailure: a refused apply is an error naming the child, and
// leaves nothing behind that would take a later event for our own.
func TestApplyFailure(t *testing.T) {
	f := newFakeAPI(t)
	f.failApply["c"] = apierrors.NewForbidden(configMaps.GroupResource(), "c", errors.New("no"))
	a := NewApplier(f.cache(), nil)
	desired := rendered(t, "c", map[string]any{"a": "1"})
	desired.SetNamespace("ns")
	d, err := a.Prepare(t.Context(), f.kube(), f.mapping(desired.GroupVersionKind()), testParent(), desired, ownership.Claimant{Manager: testManager})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Apply(t.Context(), f.kube(), d)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "apply configmaps ns/c") {
		t.Fatalf("Apply: %v, want the Forbidden, naming the child", err)
	}
	if f.get(configMaps, "ns", "c") != nil {
		t.Error("a refused apply left an object")
	}
	key := Key{GR: configMaps.GroupResource(), Namespace: "ns", Name: "c"}
	someone := &unstructured.Unstructured{}
	someone.SetResourceVersion("1")
	if a.OwnEvent(key, someone) {
		t.Error("after a refused apply, someone else's change was taken for our own")
	}
	if len(a.own) != 0 || len(a.inFlight) != 0 || len(a.held) != 0 {
		t.Errorf("expectations left after a refused apply: own %v, in flight %v, held %v", a.own, a.inFlight, a.held)
	}
}
