package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
//
// Under a default account (Options.DefaultServiceAccount) the annotation
// also chooses: a kind whose folder names no account runs as the one
// account that agrees to serve it, and only when none does as the default.
// So the installer gives each kind its own account, with exactly its
// rights, without touching the folders, and the default account, which
// every new folder gets, needs no right at all.
const AnnotationServes = "operator.tmplop.io/serves"

// identity is who every cluster call of a kind is made as.
type identity struct {
	// account is a ServiceAccount of the state namespace; "" is the
	// operator's own identity.
	account string
	// how the account was chosen, for logs and messages.
	how string
}

// How an identity is chosen.
const (
	byKindYAML   = "kind.yaml serviceAccountName"
	byAnnotation = "its annotation " + AnnotationServes
	byDefault    = "run --default-service-account"
	byOperator   = "the operator's own"
)

// impersonates reports whether the kind's calls are an account's.
func (id identity) impersonates() bool { return id.account != "" }

// clientAs returns the client every cluster call of kind k goes through
// when it runs as id.
func (m *Manager) clientAs(k *catalog.Kind, id identity) (*kube.Client, error) {
	if m.opts.NewClient != nil {
		return m.opts.NewClient(k)
	}
	if id.impersonates() {
		return m.base.Impersonating(serviceAccountUser(m.opts.StateNamespace, id.account))
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
// not agree to serve it, or whose account cannot be chosen.
type AgreementError struct {
	// Account is namespace/name; "" when no account could be chosen.
	Account string
	Kind    string // Kind.group
	Reason  string

	// gk and serviceAccount are the folder's kind and the account its
	// kind.yaml names ("": none), for a refusal before it is compiled
	// (syncRound.refused).
	gk             schema.GroupKind
	serviceAccount string
}

func (e *AgreementError) Error() string {
	if e.Account == "" {
		return fmt.Sprintf("no ServiceAccount can be chosen as the identity of kind %s: %s", e.Kind, e.Reason)
	}
	return fmt.Sprintf("ServiceAccount %s is not the identity of kind %s: %s", e.Account, e.Kind, e.Reason)
}

// agreements reads, once per sync, which accounts agree to serve kinds.
// Without a default account it reads the accounts folders name, one by
// one; with one it lists the state namespace's accounts once, to find those
// that agree to serve kinds whose folders name none.
type agreements struct {
	m    *Manager
	seen map[string]*metav1.ObjectMeta // account name -> its metadata; nil: absent
	errs map[string]error
	// listed is set once the accounts were listed (listErr: the list's
	// error); seen then holds every account of the namespace.
	listed  bool
	listErr error
}

func (m *Manager) agreements() *agreements {
	return &agreements{m: m, seen: map[string]*metav1.ObjectMeta{}, errs: map[string]error{}}
}

// identity returns the identity kind k runs as: the account its folder
// names, if it lists k in AnnotationServes; else, under a default account,
// the one account that lists k, or the default; else the operator's own.
// An error is an AgreementError.
func (a *agreements) identity(ctx context.Context, k *catalog.Kind) (identity, error) {
	return a.identityOf(ctx, &k.Spec, k.GVK.GroupKind())
}

// identityOf is identity of kind gk as its kind.yaml spec serves it, known
// before its folder is compiled (Loading.Admit).
func (a *agreements) identityOf(ctx context.Context, spec *catalog.Spec, gk schema.GroupKind) (identity, error) {
	id, err := a.choose(ctx, spec, gk)
	var refused *AgreementError
	if errors.As(err, &refused) {
		refused.gk, refused.serviceAccount = gk, spec.ServiceAccountName
	}
	return id, err
}

func (a *agreements) choose(ctx context.Context, spec *catalog.Spec, gk schema.GroupKind) (identity, error) {
	def := a.m.opts.DefaultServiceAccount
	sa := spec.ServiceAccountName
	switch {
	case a.m.opts.NewClient != nil:
		// The client is the caller's (tests): it asks no account.
		if sa != "" {
			return identity{sa, byKindYAML}, nil
		}
		return identity{def, byDefault}, nil
	case sa != "":
		return identity{sa, byKindYAML}, a.agree(ctx, gk, sa)
	case def == "":
		return identity{"", byOperator}, nil
	}
	kind := gk.String()
	if err := a.list(ctx); err != nil {
		return identity{}, &AgreementError{Kind: kind,
			Reason: fmt.Sprintf("cannot list the ServiceAccounts of %s to find the one that agrees to serve it: %v", a.m.opts.StateNamespace, err)}
	}
	var agree []string
	for name, meta := range a.seen {
		if meta != nil && slices.Contains(splitList(meta.Annotations[AnnotationServes]), kind) {
			agree = append(agree, name)
		}
	}
	slices.Sort(agree)
	switch len(agree) {
	case 0:
		return identity{def, byDefault}, nil
	case 1:
		return identity{agree[0], byAnnotation}, nil
	}
	return identity{}, &AgreementError{Kind: kind, Reason: fmt.Sprintf(
		"ServiceAccounts %s of %s all list it in their annotation %s; name one in kind.yaml serviceAccountName, or take the kind out of the others' annotation",
		strings.Join(agree, ", "), a.m.opts.StateNamespace, AnnotationServes)}
}

// agree returns nil when the account sa, which the folder of kind gk
// names, lists gk in its AnnotationServes.
func (a *agreements) agree(ctx context.Context, gk schema.GroupKind, sa string) error {
	kind := gk.String()
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

// get returns the metadata of account name, nil when it does not exist:
// from the list under a default account (the operator may list them
// there), else read by name (it may read only the accounts folders name).
func (a *agreements) get(ctx context.Context, name string) (*metav1.ObjectMeta, error) {
	if a.m.opts.DefaultServiceAccount != "" {
		if err := a.list(ctx); err != nil {
			return nil, err
		}
		return a.seen[name], nil
	}
	if meta, ok := a.seen[name]; ok {
		return meta, a.errs[name]
	}
	sa, err := a.m.base.GetServiceAccount(ctx, a.m.opts.StateNamespace, name)
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

// list reads every account of the state namespace, once per sync.
func (a *agreements) list(ctx context.Context) error {
	if a.listed {
		return a.listErr
	}
	a.listed = true
	list, err := a.m.base.ListServiceAccounts(ctx, a.m.opts.StateNamespace)
	if err != nil {
		a.listErr = err
		return err
	}
	for i := range list.Items {
		a.seen[list.Items[i].Name] = &list.Items[i].ObjectMeta
	}
	return nil
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

// AccessError is a kind whose account may not make the calls that serving
// it takes at the least: listing and watching its objects. Such a kind is
// not started: its watch would fail at every retry, it would hold the
// replica unready, and none of its objects could tell why (its account
// cannot write their status either).
type AccessError struct {
	Account string // namespace/name
	Kind    string // Kind.group
	How     string // how the account was chosen
	Missing kube.Access
	// Reason is the authorizer's, when it gave one.
	Reason string
}

func (e *AccessError) Error() string {
	msg := fmt.Sprintf("ServiceAccount %s (%s) may not %s, which serving kind %s takes (its watch)", e.Account, e.How, e.Missing, e.Kind)
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	if e.How == byDefault {
		return msg + fmt.Sprintf(": the default account is for no kind in particular; give the kind an account of its own, "+
			"one that lists %s in its annotation %s, with the RBAC `operator rbac --default-service-account` generates for the folder", e.Kind, AnnotationServes)
	}
	return msg + ": grant it the RBAC `operator rbac` generates for the folder"
}

// kindAccess are the requests every kind makes as its account: the list
// and the watch of its objects.
var kindAccess = []string{"list", "watch"}

// checkAccess asks the API server whether client, kind k's identity id,
// may list and watch k's objects (in the watched namespace, or
// cluster-wide). checked is false when the question could not be put: the
// kind is not served yet (no CRD), or the review failed; RBAC still
// decides every call, and the question is put again at the next sync. A
// refusal is an AccessError.
func (m *Manager) checkAccess(ctx context.Context, k *catalog.Kind, id identity, client *kube.Client) (checked bool, err error) {
	if !id.impersonates() || m.opts.NewClient != nil {
		return true, nil
	}
	mapping, err := m.base.Mapping(k.GVK)
	if err != nil {
		return false, nil
	}
	ns := ""
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ns = m.opts.Namespace
	}
	for _, verb := range kindAccess {
		a := kube.Access{Verb: verb, Resource: schema.GroupResource{Group: mapping.Resource.Group, Resource: mapping.Resource.Resource}, Namespace: ns}
		allowed, reason, err := client.Allowed(ctx, a)
		if err != nil {
			return false, err
		}
		if !allowed {
			return true, &AccessError{Account: m.opts.StateNamespace + "/" + id.account, Kind: k.GVK.GroupKind().String(),
				How: id.how, Missing: a, Reason: reason}
		}
	}
	return true, nil
}
