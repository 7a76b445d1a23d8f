package controller

import (
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/tmplop/operator/engine/revision"
)

// TestRevisionBeforeReconcile: a kind's objects are reconciled only once
// its folder is recorded as a revision; while the record cannot be read
// (the API server refuses the list twice), nothing of the kind is
// reconciled, and the kind is not dropped: it records and serves once the
// list answers. Each object's status then says the revision.
func TestRevisionBeforeReconcile(t *testing.T) {
	f := newFakeCluster(t, widget("a", "w1", 3))
	var lists atomic.Int32
	f.apps.PrependReactor("list", "controllerrevisions", func(clienttesting.Action) (bool, runtime.Object, error) {
		if lists.Add(1) <= 2 {
			return true, nil, apierrors.NewServiceUnavailable("etcd is away")
		}
		return false, nil, nil
	})
	m, ctx := newTestManager(t, f, Options{})
	if err := m.SyncFolders(ctx, fakeFolders{loadWidget(t)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second refused list", func() bool { return lists.Load() >= 2 })
	if f.get(configMapsGVR, "a", "w1-config") != nil {
		t.Fatal("the object was reconciled before its kind's revision was recorded")
	}
	eventually(t, "the child applied once recorded", func() bool { return f.get(configMapsGVR, "a", "w1-config") != nil })
	eventually(t, "status.observedRevision", func() bool {
		rev, found, _ := unstructured.NestedInt64(f.get(widgetGVR, "a", "w1").Object, "status", "observedRevision")
		return found && rev == 1
	})
	recs, err := f.apps.AppsV1().ControllerRevisions("ops").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Items) != 1 || recs.Items[0].Revision != 1 || recs.Items[0].Labels[revision.LabelKind] != widgetGVR.GroupResource().String() {
		t.Fatalf("records %v", names(recs.Items))
	}
}

// TestRevisionForbidden: an operator whose Role does not grant the
// revision records (upgraded without its RBAC) serves the kind all the
// same, without writing status.observedRevision.
func TestRevisionForbidden(t *testing.T) {
	f := newFakeCluster(t, widget("a", "w1", 3))
	f.apps.PrependReactor("list", "controllerrevisions", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}, "", errors.New("no RBAC"))
	})
	m, ctx := newTestManager(t, f, Options{})
	if err := m.SyncFolders(ctx, fakeFolders{loadWidget(t)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the child applied without a record", func() bool { return f.get(configMapsGVR, "a", "w1-config") != nil })
	if _, found, _ := unstructured.NestedInt64(f.get(widgetGVR, "a", "w1").Object, "status", "observedRevision"); found {
		t.Error("status.observedRevision written with no record")
	}
}

// TestRevisionHistory: a kind restarted with its folder changed records
// the next revision, and the oldest past revisionHistoryLimit are
// deleted, the current kept; restarted unchanged, it writes no record.
func TestRevisionHistory(t *testing.T) {
	f := newFakeCluster(t, widget("a", "w1", 3))
	m, ctx := newTestManager(t, f, Options{})
	records := func() []appsv1.ControllerRevision {
		l, err := f.apps.AppsV1().ControllerRevisions("ops").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	for i := 1; i <= 4; i++ {
		k := loadWidget(t)
		one := 1
		k.Spec.RevisionHistoryLimit = &one
		k.Files = maps.Clone(k.Files)
		k.Files["extra.yaml"] = fmt.Appendf(nil, "# version %d\n", i)
		k.Fingerprint = k.Files.Fingerprint()
		if err := m.Start(k); err != nil {
			t.Fatal(err)
		}
		eventually(t, fmt.Sprintf("revision %d on the object", i), func() bool {
			rev, _, _ := unstructured.NestedInt64(f.get(widgetGVR, "a", "w1").Object, "status", "observedRevision")
			return rev == int64(i)
		})
		eventually(t, "the history pruned", func() bool { return len(records()) == min(i, 2) })
	}
	var got []int64
	for _, r := range records() {
		got = append(got, r.Revision)
	}
	if fmt.Sprint(got) != "[3 4]" && fmt.Sprint(got) != "[4 3]" {
		t.Errorf("revisions kept %v, want 3 and 4", got)
	}
	writes := func() (n int) {
		for _, a := range f.apps.Actions() {
			if a.GetVerb() != "list" {
				n++
			}
		}
		return n
	}
	before, lists := writes(), len(f.apps.Actions())
	m.mu.Lock()
	k := m.kinds[widgetGVK.GroupKind()].kind
	m.mu.Unlock()
	if err := m.Start(k); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the restarted kind listed its records", func() bool { return len(f.apps.Actions()) > lists })
	if writes() != before {
		t.Errorf("a restart with an unchanged folder wrote a record: %v", f.apps.Actions()[lists:])
	}
}

func names(rs []appsv1.ControllerRevision) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s=%d", r.Name, r.Revision))
	}
	return out
}

// TestRevisionStripped: a kind whose CRD strips status.observedRevision
// (one installed from an older `operator crd`) stops sending it after the
// first status write shows it stripped: the reconciles its children's
// changes cause afterwards write no status, where each would otherwise
// send one that changes nothing.
func TestRevisionStripped(t *testing.T) {
	f := newFakeCluster(t, widget("a", "w1", 3))
	var statusWrites atomic.Int32
	f.dyn.PrependReactor("patch", "widgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchActionImpl)
		if p.GetSubresource() != "status" {
			return false, nil, nil
		}
		statusWrites.Add(1)
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(p.GetPatch()); err != nil {
			return true, nil, err
		}
		unstructured.RemoveNestedField(u.Object, "status", "observedRevision")
		data, err := u.MarshalJSON()
		if err != nil {
			return true, nil, err
		}
		p.Patch = data
		return f.apply(p)
	})
	m, ctx := newTestManager(t, f, Options{})
	if err := m.SyncFolders(ctx, fakeFolders{loadWidget(t)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the child applied", func() bool { return f.get(configMapsGVR, "a", "w1-config") != nil })
	eventually(t, "the status written", func() bool { return statusWrites.Load() > 0 })
	settled := statusWrites.Load()
	for i := range 3 {
		if err := f.dyn.Resource(configMapsGVR).Namespace("a").Delete(ctx, "w1-config", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, fmt.Sprintf("the child applied again (%d)", i), func() bool { return f.get(configMapsGVR, "a", "w1-config") != nil })
	}
	if got := statusWrites.Load(); got != settled {
		t.Errorf("%d status writes after the status settled, want 0: observedRevision sent again to a CRD that strips it", got-settled)
	}
	if _, found, _ := unstructured.NestedInt64(f.get(widgetGVR, "a", "w1").Object, "status", "observedRevision"); found {
		t.Errorf("the fake kept observedRevision")
	}
}

// TestRevisionRefused: a CRD whose structural schema does not declare
// status.observedRevision makes server-side apply refuse the whole status
// write (it does not prune the field, as an update would): the status is
// written without it, and the kind stops sending it.
func TestRevisionRefused(t *testing.T) {
	f := newFakeCluster(t, widget("a", "w1", 3))
	var refused, written atomic.Int32
	f.dyn.PrependReactor("patch", "widgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchActionImpl)
		if p.GetSubresource() != "status" {
			return false, nil, nil
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(p.GetPatch()); err != nil {
			return true, nil, err
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "observedRevision"); found {
			refused.Add(1)
			return true, nil, apierrors.NewInternalError(errors.New("failed to create typed patch object (a/w1; example.com/v1, Kind=Widget): .status.observedRevision: field not declared in schema"))
		}
		written.Add(1)
		return f.apply(p)
	})
	m, ctx := newTestManager(t, f, Options{})
	if err := m.SyncFolders(ctx, fakeFolders{loadWidget(t)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the status written without observedRevision", func() bool { return written.Load() > 0 })
	for i := range 2 {
		if err := f.dyn.Resource(configMapsGVR).Namespace("a").Delete(ctx, "w1-config", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, fmt.Sprintf("the child applied again (%d)", i), func() bool { return f.get(configMapsGVR, "a", "w1-config") != nil })
	}
	if n := refused.Load(); n != 1 {
		t.Errorf("%d status writes refused for observedRevision, want 1: the kind must stop sending it", n)
	}
}
