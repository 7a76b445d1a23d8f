package controller

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tmplop/operator/engine/catalog"
)

// TestAgreement: a kind runs as the ServiceAccount its folder names only
// when the account lists the kind; the default account and the operator's
// own identity need no agreement (whoever runs the operator chose them).
func TestAgreement(t *testing.T) {
	sa := func(name, serves string) *corev1.ServiceAccount {
		o := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "operator-system"}}
		if serves != "" {
			o.Annotations = map[string]string{AnnotationServes: serves}
		}
		return o
	}
	cs := fake.NewClientset(
		sa("team-a", "Widget.e.io, Gadget.e.io"),
		sa("team-b", "Gizmo.e.io"),
		sa("silent", ""),
	)
	m := &Manager{opts: Options{StateNamespace: "operator-system", DefaultServiceAccount: "operator-default"},
		accounts: cs.CoreV1().ServiceAccounts("operator-system")}
	kind := func(group, k, account string) *catalog.Kind {
		c := folderOf("f", group, k)
		c.Spec.ServiceAccountName = account
		return c
	}
	cases := []struct {
		name    string
		kind    *catalog.Kind
		wantErr string
	}{
		{name: "listed", kind: kind("e.io", "Gadget", "team-a")},
		{name: "default account: no agreement needed", kind: kind("e.io", "Gizmo", "")},
		{name: "another team's account", kind: kind("e.io", "Widget", "team-b"), wantErr: `its annotation operator.tmplop.io/serves lists "Gizmo.e.io"; the account's owner agrees by adding Widget.e.io`},
		{name: "no annotation", kind: kind("e.io", "Widget", "silent"), wantErr: "it has no annotation operator.tmplop.io/serves"},
		{name: "absent account", kind: kind("e.io", "Widget", "nobody"), wantErr: "ServiceAccount operator-system/nobody is not the identity of kind Widget.e.io: it does not exist"},
		{name: "same kind, other group", kind: kind("f.io", "Widget", "team-a"), wantErr: "Widget.f.io"},
	}
	a := m.agreements()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := a.check(t.Context(), tc.kind)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ae *AgreementError
			if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an AgreementError containing %q", err, tc.wantErr)
			}
		})
	}
	if n := len(cs.Actions()); n != 4 {
		t.Errorf("%d reads of ServiceAccounts, want 4: one per account per sync", n)
	}
}
