package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/requeue"

	"github.com/tmplop/operator/engine/revision"
	"github.com/tmplop/operator/engine/rollout"
	"github.com/tmplop/operator/engine/status"
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

// TestReconcilerOfRefuses: an older revision is compiled from its record
// only when the record is the one its name and fingerprint say. What
// retrying soon cannot help (a record edited by hand, a record gone,
// files that do not compile) is marked terminal, tried again after
// revisionRetry; a failed read of the records is retried with backoff.
func TestReconcilerOfRefuses(t *testing.T) {
	f := newFakeCluster(t)
	m, ctx := newTestManager(t, f, Options{})
	if err := m.Start(loadWidget(t)); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	kc := m.kinds[widgetGVK.GroupKind()]
	m.mu.Unlock()
	gr := widgetGVR.GroupResource()
	ensure := func(files layout.Files) revision.Revision {
		t.Helper()
		rev, err := kc.revisions.Ensure(ctx, gr, files.Fingerprint(), files)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	older := layout.Files{"kind.yaml": widgetFolder["kind.yaml"], "configmap.yaml": []byte(
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\ndata:\n  old: \"yes\"\n")}
	good := ensure(older)
	edited := ensure(layout.Files{"kind.yaml": widgetFolder["kind.yaml"], "configmap.yaml": []byte("a: 1\n")})
	rec, err := f.apps.AppsV1().ControllerRevisions("ops").Get(ctx, edited.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := revision.Encode(layout.Files{"kind.yaml": widgetFolder["kind.yaml"], "configmap.yaml": []byte("a: 2\n")})
	if err != nil {
		t.Fatal(err)
	}
	rec.Data.Raw = data
	if _, err := f.apps.AppsV1().ControllerRevisions("ops").Update(ctx, rec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	broken := ensure(layout.Files{"kind.yaml": widgetFolder["kind.yaml"], "configmap.yaml": []byte("{{ if }}\n")})

	s := &staged{c: kc, gr: gr, reconcilers: map[int64]*reconcile.Reconciler{}}
	for _, tc := range []struct {
		name     string
		ref      rollout.Ref
		failList bool
		wantErr  string
		terminal bool
	}{
		{name: "as recorded", ref: rollout.Ref{Record: good.Name, Number: good.Number}},
		{name: "edited by hand", ref: rollout.Ref{Record: edited.Name, Number: edited.Number}, wantErr: "fingerprint", terminal: true},
		{name: "gone", ref: rollout.Ref{Record: "widgets.e.io-gone", Number: 9}, wantErr: "no revision", terminal: true},
		{name: "does not compile", ref: rollout.Ref{Record: broken.Name, Number: broken.Number}, wantErr: "does not compile", terminal: true},
		{name: "records unreadable", ref: rollout.Ref{Record: "widgets.e.io-other", Number: 8}, failList: true, wantErr: "etcd is down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.failList {
				f.apps.PrependReactor("list", "controllerrevisions", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
				})
				t.Cleanup(func() { f.apps.ReactionChain = f.apps.ReactionChain[1:] })
			}
			r, err := s.reconcilerOf(ctx, tc.ref)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if again, _ := s.reconcilerOf(ctx, tc.ref); again != r {
					t.Error("the revision was compiled twice")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
			}
			mark, marked := requeue.Of(err)
			if got := marked && mark.Terminal; got != tc.terminal {
				t.Errorf("terminal = %v, want %v (mark %+v)", got, tc.terminal, mark)
			}
			if tc.terminal && mark.After != revisionRetry {
				t.Errorf("tried again after %v, want %v", mark.After, revisionRetry)
			}
		})
	}
}

// TestRevisionUnavailableReported: an object whose revision cannot be
// served is told so as any failed reconcile is (Reconciled=False with
// reason RevisionUnavailable, Ready=False, a Warning Event), its other
// status fields kept; a terminal mark comes back as a TerminalError tried
// again after its delay, a failed read as an error retried with backoff.
func TestRevisionUnavailableReported(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		wantAfter time.Duration // 0: not terminal
	}{
		{name: "edited by hand", err: requeue.With(errors.New("revision 1: its files' fingerprint a is not the recorded b"),
			requeue.Mark{Terminal: true, After: revisionRetry}), wantAfter: revisionRetry},
		{name: "records unreadable", err: errors.New("revision 1: etcd is down")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := widget("a", "w1", 3)
			w.Object["status"] = map[string]any{"observedRevision": int64(1), "replicas": int64(3)}
			f := newFakeCluster(t, w)
			rec := record.NewFakeRecorder(10)
			r := &reconcile.Reconciler{Kind: loadWidget(t), Client: f.client, Recorder: rec, Stats: &reconcile.Stats{}}
			err := r.RevisionUnavailable(t.Context(), w.DeepCopy(), tc.err)
			var terminal *reconcile.TerminalError
			if got := errors.As(err, &terminal); got != (tc.wantAfter > 0) {
				t.Fatalf("err %v: terminal %v, want %v", err, got, tc.wantAfter > 0)
			}
			if terminal != nil && terminal.RetryAfter != tc.wantAfter {
				t.Errorf("retried after %v, want %v", terminal.RetryAfter, tc.wantAfter)
			}
			live := f.get(widgetGVR, "a", "w1")
			conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
			byType := map[string]map[string]any{}
			for _, c := range conds {
				byType[c.(map[string]any)["type"].(string)] = c.(map[string]any)
			}
			if c := byType["Reconciled"]; c == nil || c["status"] != "False" || c["reason"] != status.ReasonRevisionUnavailable ||
				!strings.Contains(c["message"].(string), "revision 1") {
				t.Errorf("Reconciled condition %v, want False/%s naming the revision", c, status.ReasonRevisionUnavailable)
			}
			if c := byType["Ready"]; c == nil || c["status"] != "False" {
				t.Errorf("Ready condition %v, want False", c)
			}
			if got, _, _ := unstructured.NestedInt64(live.Object, "status", "replicas"); got != 3 {
				t.Errorf("status.replicas = %d, want 3 kept", got)
			}
			select {
			case e := <-rec.Events:
				if !strings.HasPrefix(e, "Warning "+status.ReasonRevisionUnavailable+" ") {
					t.Errorf("Event %q, want a Warning %s", e, status.ReasonRevisionUnavailable)
				}
			default:
				t.Error("no Event")
			}
		})
	}
}
