package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
)

func serviceAccount(name, serves string) *corev1.ServiceAccount {
	o := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "operator-system"}}
	if serves != "" {
		o.Annotations = map[string]string{AnnotationServes: serves}
	}
	return o
}

func kindAs(group, k, account string) *catalog.Kind {
	c := folderOf("f", group, k)
	c.Spec.ServiceAccountName = account
	return c
}

// TestAgreement: a kind runs as the ServiceAccount its folder names only
// when the account lists the kind; without a default account, a kind that
// names none runs as the operator, and each named account is read once.
func TestAgreement(t *testing.T) {
	cs := fake.NewClientset(
		serviceAccount("team-a", "Widget.e.io, Gadget.e.io"),
		serviceAccount("team-b", "Gizmo.e.io"),
		serviceAccount("silent", ""),
	)
	m := &Manager{opts: Options{StateNamespace: "operator-system"}, base: kube.NewForClients(kube.Clients{Core: cs.CoreV1()}, "op")}
	cases := []struct {
		name    string
		kind    *catalog.Kind
		want    identity
		wantErr string
	}{
		{name: "listed", kind: kindAs("e.io", "Gadget", "team-a"), want: identity{"team-a", byKindYAML}},
		{name: "no account, no default: the operator's own", kind: kindAs("e.io", "Gizmo", ""), want: identity{"", byOperator}},
		{name: "another team's account", kind: kindAs("e.io", "Widget", "team-b"), wantErr: `its annotation operator.tmplop.io/serves lists "Gizmo.e.io"; the account's owner agrees by adding Widget.e.io`},
		{name: "no annotation", kind: kindAs("e.io", "Widget", "silent"), wantErr: "it has no annotation operator.tmplop.io/serves"},
		{name: "absent account", kind: kindAs("e.io", "Widget", "nobody"), wantErr: "ServiceAccount operator-system/nobody is not the identity of kind Widget.e.io: it does not exist"},
		{name: "same kind, other group", kind: kindAs("f.io", "Widget", "team-a"), wantErr: "Widget.f.io"},
	}
	a := m.agreements()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkIdentity(t, a, tc.kind, tc.want, tc.wantErr)
		})
	}
	for _, act := range cs.Actions() {
		if act.GetVerb() != "get" {
			t.Errorf("%s of ServiceAccounts without a default account: it may read only the accounts folders name", act.GetVerb())
		}
	}
	if n := len(cs.Actions()); n != 4 {
		t.Errorf("%d reads of ServiceAccounts, want 4: one per account per sync", n)
	}
}

// TestIdentityUnderDefaultAccount: under a default account, a kind whose
// folder names no account runs as the one account that agrees to serve it
// (the installer's choice, so the default account needs no kind's
// rights), else as the default; two that agree are refused rather than
// guessed between. The accounts are listed once per sync, and a failed
// list chooses nothing.
func TestIdentityUnderDefaultAccount(t *testing.T) {
	cs := fake.NewClientset(
		serviceAccount("operator-kinds", ""),
		serviceAccount("kind-memcached", "Memcached.cache.example.com"),
		serviceAccount("team-a", "Widget.e.io,Gadget.e.io"),
		serviceAccount("team-b", "Gadget.e.io"),
		serviceAccount("core", "ConfigMap"),
	)
	m := &Manager{opts: Options{StateNamespace: "operator-system", DefaultServiceAccount: "operator-kinds"},
		base: kube.NewForClients(kube.Clients{Core: cs.CoreV1()}, "op")}
	cases := []struct {
		name    string
		kind    *catalog.Kind
		want    identity
		wantErr string
	}{
		{name: "the account that agrees", kind: kindAs("cache.example.com", "Memcached", ""), want: identity{"kind-memcached", byAnnotation}},
		{name: "a core kind", kind: kindAs("", "ConfigMap", ""), want: identity{"core", byAnnotation}},
		{name: "none agrees: the default", kind: kindAs("e.io", "Escalation", ""), want: identity{"operator-kinds", byDefault}},
		{name: "the same kind in another group: the default", kind: kindAs("f.io", "Widget", ""), want: identity{"operator-kinds", byDefault}},
		{name: "two agree: refused, naming both", kind: kindAs("e.io", "Gadget", ""),
			wantErr: "no ServiceAccount can be chosen as the identity of kind Gadget.e.io: ServiceAccounts team-a, team-b of operator-system all list it"},
		{name: "named and listed: from the list", kind: kindAs("e.io", "Gadget", "team-b"), want: identity{"team-b", byKindYAML}},
		{name: "named, not listed", kind: kindAs("e.io", "Widget", "team-b"), wantErr: `ServiceAccount operator-system/team-b is not the identity of kind Widget.e.io: its annotation operator.tmplop.io/serves lists "Gadget.e.io"`},
		{name: "named, absent", kind: kindAs("e.io", "Widget", "nobody"), wantErr: "it does not exist"},
	}
	a := m.agreements()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkIdentity(t, a, tc.kind, tc.want, tc.wantErr)
		})
	}
	if acts := cs.Actions(); len(acts) != 1 || acts[0].GetVerb() != "list" {
		t.Errorf("ServiceAccounts read by %v, want one list per sync", acts)
	}

	t.Run("the list fails", func(t *testing.T) {
		cs := fake.NewClientset()
		cs.PrependReactor("list", "serviceaccounts", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "", errors.New("RBAC: no"))
		})
		m := &Manager{opts: Options{StateNamespace: "operator-system", DefaultServiceAccount: "operator-kinds"},
			base: kube.NewForClients(kube.Clients{Core: cs.CoreV1()}, "op")}
		a := m.agreements()
		checkIdentity(t, a, kindAs("e.io", "Widget", ""), identity{}, "cannot list the ServiceAccounts of operator-system to find the one that agrees to serve it")
		checkIdentity(t, a, kindAs("e.io", "Widget", "team-a"), identity{}, "ServiceAccount operator-system/team-a is not the identity of kind Widget.e.io: cannot read it")
		if n := len(cs.Actions()); n != 1 {
			t.Errorf("%d lists, want 1 per sync, failed or not", n)
		}
	})
}

func checkIdentity(t *testing.T, a *agreements, k *catalog.Kind, want identity, wantErr string) {
	t.Helper()
	got, err := a.identity(t.Context(), k)
	if wantErr == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		if got != want {
			t.Errorf("identity %+v, want %+v", got, want)
		}
		return
	}
	var ae *AgreementError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("got %+v, %v; want an AgreementError containing %q", got, err, wantErr)
	}
}

// TestCheckAccess: a kind that runs as an account is served only if the
// account may list and watch the kind's objects, asked of the API server
// as the account itself; the refusal names the account, how it was chosen
// and the missing rule. A kind not served yet, or a review that fails, is
// left unchecked: asked again at the next sync, never refused on a guess.
func TestCheckAccess(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(configMapGVK, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "e.io", Version: "v1", Kind: "Cluster"}, meta.RESTScopeRoot)
	cases := []struct {
		name        string
		kind        *catalog.Kind
		id          identity
		namespace   string // run --namespace
		allow       map[string]bool
		reviewErr   error
		wantChecked bool
		wantErr     string // an AccessError's message contains it
		wantOther   bool   // an error that is no AccessError
		wantAsked   []string
	}{
		{name: "may list and watch", kind: folderOf("f", "", "ConfigMap"), id: identity{"kind-cm", byAnnotation},
			allow: map[string]bool{"list configmaps": true, "watch configmaps": true}, wantChecked: true,
			wantAsked: []string{"list configmaps  ", "watch configmaps  "}},
		{name: "the default account may do nothing", kind: folderOf("f", "", "ConfigMap"), id: identity{"operator-kinds", byDefault},
			wantChecked: true, wantAsked: []string{"list configmaps  "},
			wantErr: `ServiceAccount operator-system/operator-kinds (run --default-service-account) may not list configmaps (API group "") cluster-wide, which serving kind ConfigMap takes (its watch): the default account is for no kind in particular`},
		{name: "list but not watch", kind: folderOf("f", "", "ConfigMap"), id: identity{"team", byKindYAML},
			allow: map[string]bool{"list configmaps": true}, wantChecked: true, wantAsked: []string{"list configmaps  ", "watch configmaps  "},
			wantErr: `ServiceAccount operator-system/team (kind.yaml serviceAccountName) may not watch configmaps (API group "") cluster-wide`},
		{name: "in the watched namespace", kind: folderOf("f", "", "ConfigMap"), id: identity{"team", byKindYAML}, namespace: "team-a",
			wantChecked: true, wantAsked: []string{"list configmaps  team-a"}, wantErr: "may not list configmaps (API group \"\") in namespace team-a"},
		{name: "a cluster-scoped kind: cluster-wide", kind: folderOf("f", "e.io", "Cluster"), id: identity{"team", byKindYAML}, namespace: "team-a",
			wantChecked: true, wantAsked: []string{"list clusters e.io "}, wantErr: "may not list clusters (API group e.io) cluster-wide"},
		{name: "not served yet: unchecked", kind: folderOf("f", "e.io", "Widget"), id: identity{"team", byKindYAML}},
		{name: "the operator's own: not asked", kind: folderOf("f", "", "ConfigMap"), id: identity{"", byOperator}, wantChecked: true},
		{name: "the review fails: unchecked", kind: folderOf("f", "", "ConfigMap"), id: identity{"team", byKindYAML},
			reviewErr: errors.New("connection refused"), wantOther: true, wantAsked: []string{"list configmaps  "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			authz := fake.NewClientset()
			var asked []string
			authz.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
				r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
				attrs := r.Spec.ResourceAttributes
				asked = append(asked, attrs.Verb+" "+attrs.Resource+" "+attrs.Group+" "+attrs.Namespace)
				if tc.reviewErr != nil {
					return true, nil, tc.reviewErr
				}
				r.Status.Allowed = tc.allow[attrs.Verb+" "+attrs.Resource]
				return true, r, nil
			})
			base := kube.NewForClients(kube.Clients{Mapper: mapper, Authorization: authz.AuthorizationV1()}, "op")
			m := &Manager{opts: Options{StateNamespace: "operator-system", Namespace: tc.namespace}, base: base}
			client, err := base.Impersonating(serviceAccountUser("operator-system", tc.id.account))
			if err != nil {
				t.Fatal(err)
			}
			checked, err := m.checkAccess(context.Background(), tc.kind, tc.id, client)
			if checked != tc.wantChecked {
				t.Errorf("checked %v, want %v", checked, tc.wantChecked)
			}
			var ae *AccessError
			switch {
			case tc.wantErr != "":
				if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("got %v, want an AccessError containing %q", err, tc.wantErr)
				}
			case tc.wantOther:
				if err == nil || errors.As(err, &ae) {
					t.Errorf("got %v, want an error that is no AccessError", err)
				}
			case err != nil:
				t.Errorf("refused: %v", err)
			}
			if strings.Join(asked, ",") != strings.Join(tc.wantAsked, ",") {
				t.Errorf("asked %q, want %q", asked, tc.wantAsked)
			}
		})
	}
}

// reportingFolders is a source of ready-made kinds that keeps what it is
// told of each load (loadReporter).
type reportingFolders struct {
	fakeFolders
	mu      sync.Mutex
	reports []error
}

func (r *reportingFolders) Reported(_ string, _ schema.GroupKind, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, err)
}

func (r *reportingFolders) last() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reports) == 0 {
		return errors.New("no report")
	}
	return r.reports[len(r.reports)-1]
}

// TestSyncChoosesIdentity: under a default account that may do nothing, a
// new folder whose kind no account agrees to serve is refused with an
// AccessError and never started (no watch, no write); once the installer
// gives the kind an account of its own (the annotation, and the RBAC), the
// next sync starts it as that account; an unchanged sync asks nothing
// again; an account that withdraws sends the kind back to the default,
// which stops it.
func TestSyncChoosesIdentity(t *testing.T) {
	inOps := func(sa *corev1.ServiceAccount) *corev1.ServiceAccount { sa.Namespace = "ops"; return sa }
	core := fake.NewClientset(inOps(serviceAccount("operator-kinds", "")))
	authz := fake.NewClientset()
	var mu sync.Mutex
	allowed, reviews := false, 0
	authz.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		reviews++
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = allowed
		return true, r, nil
	})
	setAllowed := func(v bool) { mu.Lock(); allowed = v; mu.Unlock() }
	f := newFakeClusterWith(t, kube.Clients{Core: core.CoreV1(), Authorization: authz.AuthorizationV1()}, widget("a", "w1", 3))
	m, ctx := newTestManager(t, f, Options{DefaultServiceAccount: "operator-kinds"})
	src := &reportingFolders{fakeFolders: fakeFolders{loadWidget(t)}}
	sas := core.CoreV1().ServiceAccounts("ops")
	running := func() *kindController {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.kinds[widgetGVK.GroupKind()]
	}

	// A new folder, no account of its own: the default, which may not.
	if err := m.SyncFolders(ctx, src); err != nil {
		t.Fatal(err)
	}
	var ae *AccessError
	if err := src.last(); !errors.As(err, &ae) || ae.Account != "ops/operator-kinds" || ae.Missing.Verb != "list" {
		t.Fatalf("report %v, want an AccessError naming ops/operator-kinds and list", err)
	}
	if kc := running(); kc != nil {
		t.Fatalf("the kind runs as %+v: refused, it must not start", kc.identity)
	}
	if f.get(configMapsGVR, "a", "w1-config") != nil || len(m.Kinds()) != 0 || m.watches.size() != 0 {
		t.Fatalf("something of the refused kind ran: kinds %v, %d watches", m.Kinds(), m.watches.size())
	}

	// The installer's account for the kind, with its rights.
	if _, err := sas.Create(ctx, inOps(serviceAccount("kind-widget", "Widget.e.io")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setAllowed(true)
	if err := m.SyncFolders(ctx, src); err != nil {
		t.Fatal(err)
	}
	kc := running()
	if kc == nil || kc.identity != (identity{"kind-widget", byAnnotation}) || !kc.accessChecked {
		t.Fatalf("running %+v, want the kind started as kind-widget, checked", kc)
	}
	if err := src.last(); err != nil {
		t.Fatalf("report %v, want the kind started", err)
	}
	eventually(t, "the child applied", func() bool { return f.get(configMapsGVR, "a", "w1-config") != nil })

	mu.Lock()
	before := reviews
	mu.Unlock()
	if err := m.SyncFolders(ctx, src); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	after := reviews
	mu.Unlock()
	if running() != kc || after != before {
		t.Errorf("an unchanged sync restarted the kind (%v) or asked the API server again (%d reviews)", running() != kc, after-before)
	}

	// The account withdraws: the kind's identity is the default again,
	// which may not watch it: the kind stops.
	if _, err := sas.Update(ctx, inOps(serviceAccount("kind-widget", "")), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	setAllowed(false)
	if err := m.SyncFolders(ctx, src); err != nil {
		t.Fatal(err)
	}
	if kc := running(); kc != nil {
		t.Fatalf("the kind still runs as %+v after its account withdrew", kc.identity)
	}
	if err := src.last(); !errors.As(err, &ae) || ae.Account != "ops/operator-kinds" {
		t.Fatalf("report %v, want an AccessError naming the default account", err)
	}
}
