package controller

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"

	"github.com/tmplop/operator/engine/revision"
	"github.com/tmplop/operator/engine/rollout"
)

// TestMostServed: a kind's first rollout in steps comes from the revision
// most of its objects are on, among the recorded ones whose files are
// kept, never the folder's own.
func TestMostServed(t *testing.T) {
	revs := []revision.Revision{{Name: "r1", Number: 1}, {Name: "r2", Number: 2}, {Name: "r3", Number: 3}, {Name: "big", Number: 4, FilesOmitted: true}}
	on := func(ns ...int64) []rollout.Object {
		var out []rollout.Object
		for _, n := range ns {
			out = append(out, rollout.Object{ObservedRevision: n})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		objs   []rollout.Object
		folder int64
		want   rollout.Ref
	}{
		{name: "no objects", folder: 3},
		{name: "all on the folder's", objs: on(3, 3), folder: 3},
		{name: "most on 2", objs: on(1, 2, 2, 3, 3, 3), folder: 3, want: rollout.Ref{Record: "r2", Number: 2}},
		{name: "a tie: the newer", objs: on(1, 2), folder: 3, want: rollout.Ref{Record: "r2", Number: 2}},
		{name: "a revision without its files", objs: on(4, 4, 1), folder: 3, want: rollout.Ref{Record: "r1", Number: 1}},
		{name: "a pruned revision", objs: on(9, 9, 1), folder: 3, want: rollout.Ref{Record: "r1", Number: 1}},
		{name: "never reconciled", objs: on(0, 0, 2), folder: 3, want: rollout.Ref{Record: "r2", Number: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mostServed(tc.objs, revs, tc.folder); got != tc.want {
				t.Errorf("mostServed = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestRevisionIdentity: an older revision served beside the folder runs
// as its own kind.yaml's account, agreed to as any folder's is; the same
// account as the folder's shares the kind's client.
func TestRevisionIdentity(t *testing.T) {
	inOps := func(sa *corev1.ServiceAccount) *corev1.ServiceAccount { sa.Namespace = "ops"; return sa }
	core := fake.NewClientset(inOps(serviceAccount("new-account", "Widget.e.io")), inOps(serviceAccount("old-account", "Widget.e.io")),
		inOps(serviceAccount("elsewhere", "Gadget.e.io")))
	f := newFakeClusterWith(t, kube.Clients{Core: core.CoreV1()})
	m, ctx := newTestManager(t, f, Options{})
	k := loadWidget(t)
	k.Spec.ServiceAccountName = "new-account"
	if err := m.Start(k); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	kc := m.kinds[widgetGVK.GroupKind()]
	m.mu.Unlock()
	withAccount := func(sa string) *catalog.Kind {
		old := loadWidget(t)
		old.Spec.ServiceAccountName = sa
		return old
	}
	for _, tc := range []struct {
		account, wantUser, wantErr string
	}{
		{account: "new-account", wantUser: kc.reconciler.Client.Identity()},
		{account: "old-account", wantUser: "system:serviceaccount:ops:old-account"},
		{account: "elsewhere", wantErr: "Widget.e.io"},
	} {
		t.Run(tc.account, func(t *testing.T) {
			r, err := kc.newReconciler(ctx, withAccount(tc.account))
			if tc.wantErr != "" {
				var ae *AgreementError
				if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want an AgreementError naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Client.Identity(); got != tc.wantUser {
				t.Errorf("revision of account %s runs as %q, want %q", tc.account, got, tc.wantUser)
			}
			if tc.account == "new-account" && r.Client != kc.reconciler.Client {
				t.Error("the folder's own account got a client of its own")
			}
		})
	}
}
