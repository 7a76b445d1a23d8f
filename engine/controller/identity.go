package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
)

// AnnotationServes is how a ServiceAccount agrees to be the identity of
// kinds: a comma-separated list of Kind.group (Memcached.cache.example.com;
// Kind alone for the core group). Naming an account in kind.yaml is not
// enough: whoever may write a kind folder (a ConfigMap) could otherwise
// borrow another team's account and its rights. Writing this annotation
// takes the right to edit ServiceAccounts in the operator's namespace,
// which is the account owner's, not the folder author's.
const AnnotationServes = "operator.tmplop.io/serves"

// account is the ServiceAccount every cluster call of kind k is made as,
// and whether k's folder named it (explicit) or the operator's default
// applies; "" is the operator's own identity.
func (m *Manager) account(k *catalog.Kind) (name string, explicit bool) {
	if sa := k.Spec.ServiceAccountName; sa != "" {
		return sa, true
	}
	return m.opts.DefaultServiceAccount, false
}

// clientFor returns the client every cluster call of kind k goes through.
func (m *Manager) clientFor(k *catalog.Kind) (*kube.Client, error) {
	if m.opts.NewClient != nil {
		return m.opts.NewClient(k)
	}
	if sa, _ := m.account(k); sa != "" {
		return m.base.Impersonating(serviceAccountUser(m.opts.StateNamespace, sa))
	}
	return m.base, nil
}

// serviceAccountUser is the user name of a ServiceAccount, as the API
// server authenticates it (k8s.io/apiserver's serviceaccount.MakeUsername,
// without depending on the API server's module for one line).
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// AgreementError is a kind whose folder names a ServiceAccount that does
// not agree to serve it.
type AgreementError struct {
	Account string // namespace/name
	Kind    string // Kind.group
	Reason  string
}

func (e *AgreementError) Error() string {
	return fmt.Sprintf("ServiceAccount %s is not the identity of kind %s: %s", e.Account, e.Kind, e.Reason)
}

// agreements reads, once per sync, whether accounts agree to serve kinds.
type agreements struct {
	m    *Manager
	seen map[string]*metav1.ObjectMeta // account name -> its metadata; nil: absent
	errs map[string]error
}

func (m *Manager) agreements() *agreements {
	return &agreements{m: m, seen: map[string]*metav1.ObjectMeta{}, errs: map[string]error{}}
}

// check returns nil when k may run as its account: the operator's own or
// the default one (chosen by whoever runs the operator), or a
// ServiceAccount that lists k in its AnnotationServes.
func (a *agreements) check(ctx context.Context, k *catalog.Kind) error {
	sa, explicit := a.m.account(k)
	if !explicit || a.m.opts.NewClient != nil {
		return nil
	}
	kind := k.GVK.GroupKind().String()
	who := a.m.opts.StateNamespace + "/" + sa
	meta, err := a.get(ctx, sa)
	if err != nil {
		return &AgreementError{Account: who, Kind: kind, Reason: fmt.Sprintf("cannot read it to see whether it agrees: %v", err)}
	}
	if meta == nil {
		return &AgreementError{Account: who, Kind: kind, Reason: "it does not exist"}
	}
	serves := meta.Annotations[AnnotationServes]
	if slices.Contains(splitList(serves), kind) {
		return nil
	}
	listed := "it has no annotation " + AnnotationServes
	if serves != "" {
		listed = fmt.Sprintf("its annotation %s lists %q", AnnotationServes, serves)
	}
	return &AgreementError{Account: who, Kind: kind,
		Reason: fmt.Sprintf("%s; the account's owner agrees by adding %s to it", listed, kind)}
}

func (a *agreements) get(ctx context.Context, name string) (*metav1.ObjectMeta, error) {
	if meta, ok := a.seen[name]; ok {
		return meta, a.errs[name]
	}
	sa, err := a.m.accounts.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		a.seen[name] = nil
	case err != nil:
		a.seen[name], a.errs[name] = nil, err
	default:
		a.seen[name] = &sa.ObjectMeta
	}
	return a.seen[name], a.errs[name]
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
