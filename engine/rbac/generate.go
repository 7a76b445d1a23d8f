package rbac

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/catalog"
	crdgen "github.com/tmplop/operator/engine/crd"
	"github.com/tmplop/operator/engine/inventory"
)

// Defaults of Options.
const (
	DefaultNamespace      = "operator-system"
	DefaultServiceAccount = "operator"
	DefaultName           = "operator"
	DefaultFieldManager   = "operator"
	// DeployDefaultServiceAccount is deploy/'s run
	// --default-service-account: the identity of the shipped folders.
	DeployDefaultServiceAccount = "operator-kinds"
)

// Options say what to generate RBAC for, and for whom.
type Options struct {
	// Templates is a directory of kind folders, or one kind folder.
	Templates string
	// CRDs are directories of CustomResourceDefinition files, where the
	// resources of custom kinds are read.
	CRDs []string
	// Namespace is the operator's namespace: its ServiceAccount, its own
	// records, and the ServiceAccounts of kinds with serviceAccountName.
	Namespace string
	// ServiceAccount is the operator's ServiceAccount.
	ServiceAccount string
	// DefaultServiceAccount is run --default-service-account: the account
	// of every kind that no account agrees to serve. It gets no right at
	// all: each folder without a serviceAccountName gets an account of its
	// own instead (KindAccount), which agrees to serve the folder's kind
	// and holds exactly its rules, so that a folder added later, which
	// runs as the default, can do nothing until it is given one. The
	// operator keeps only its watches of children, Events and its
	// records. "": such kinds run as the operator.
	DefaultServiceAccount string
	// FieldManager is the operator's run --field-manager, which names its
	// inventory ConfigMap; "": DefaultFieldManager.
	FieldManager string
	// Name prefixes the names of the roles and bindings.
	Name string
	// Warn receives warnings (resources guessed); nil drops them.
	Warn func(msg string)
	// InstallCRDs adds what `run --install-crds` needs: get and patch on
	// exactly the folders' CRDs, and create (which RBAC cannot restrict by
	// name; creating cannot change an existing CRD).
	InstallCRDs bool
	// Webhook adds what `run --webhook-bind-address` without
	// --webhook-cert-dir needs whatever the folders are: the Secret of the
	// conversion webhook's certificate (WebhookSecretName). It is granted
	// anyway when a folder has several versions. A deployment that serves
	// the webhook before any folder has versions (deploy/) needs it: the
	// operator makes the Secret at start, and a folder of several versions
	// may come later as a ConfigMap.
	Webhook bool
	// WebhookSecret is run's --webhook-secret: the name of that Secret;
	// "": WebhookSecretName.
	WebhookSecret string
	// Plan generates, instead of the operator's RBAC, the read-only roles
	// of `operator plan` (PlanObjects); PlanDryRun adds the create and
	// patch its dry-run applies need.
	Plan, PlanDryRun bool
}

// WebhookSecretName is the Secret `run --webhook-bind-address` keeps its
// certificate in (engine/webhook.DefaultSecretName; not imported, so that
// RBAC generation does not link the webhook's server).
const WebhookSecretName = "operator-webhook-cert"

func (o *Options) warn(msg string) {
	if o.Warn != nil {
		o.Warn(msg)
	}
}

// addCRDs grants `run --install-crds` its calls on the folders' own CRDs.
func addCRDs(g *grants, folders []*Folder) error {
	var names, from, migrated []string
	var errs []error
	for _, f := range folders {
		c, err := crdgen.ForKind(f.Kind)
		if errors.Is(err, crdgen.ErrNoSchema) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: no CRD rights: %w", f.Path(), err))
			continue
		}
		names = append(names, c.Name)
		from = append(from, f.Kind.Name)
		if f.Kind.Converter() != nil {
			// The storage migration (engine/migrate) writes the objects back
			// and prunes the CRD's storedVersions.
			migrated = append(migrated, c.Name)
		}
	}
	if len(names) == 0 {
		return errors.Join(errs...)
	}
	sort.Strings(names)
	crds := schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	g.add(crds, whyOwn, "run --install-crds: creates the folders' CRDs", "create")
	g.names = append(g.names, rbacv1.PolicyRule{APIGroups: []string{crds.Group}, Resources: []string{crds.Resource},
		Verbs: []string{"get", "patch"}, ResourceNames: names})
	g.namesWhy = append(g.namesWhy, fmt.Sprintf("apiextensions.k8s.io/customresourcedefinitions %s [get patch]: run --install-crds, the CRDs of %s",
		strings.Join(names, ","), strings.Join(from, ", ")))
	if len(migrated) > 0 {
		sort.Strings(migrated)
		g.names = append(g.names, rbacv1.PolicyRule{APIGroups: []string{crds.Group}, Resources: []string{crds.Resource + "/status"},
			Verbs: []string{"get", "update"}, ResourceNames: migrated})
		g.namesWhy = append(g.namesWhy, fmt.Sprintf("apiextensions.k8s.io/customresourcedefinitions/status %s [get update]: run --install-crds, the storage migration prunes storedVersions",
			strings.Join(migrated, ",")))
	}
	return errors.Join(errs...)
}

func (o *Options) defaults() {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.ServiceAccount == "" {
		o.ServiceAccount = DefaultServiceAccount
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
	if o.WebhookSecret == "" {
		o.WebhookSecret = WebhookSecretName
	}
}

// Command is the command line that generates with o.
func (o Options) Command() string {
	o.defaults()
	args := []string{"operator", "rbac", "--templates", o.Templates}
	for _, d := range o.CRDs {
		args = append(args, "--crds", d)
	}
	if o.Namespace != DefaultNamespace {
		args = append(args, "--namespace", o.Namespace)
	}
	if o.ServiceAccount != DefaultServiceAccount {
		args = append(args, "--service-account", o.ServiceAccount)
	}
	if o.Name != DefaultName {
		args = append(args, "--name", o.Name)
	}
	if o.DefaultServiceAccount != "" {
		args = append(args, "--default-service-account", o.DefaultServiceAccount)
	}
	if o.FieldManager != DefaultFieldManager {
		args = append(args, "--field-manager", o.FieldManager)
	}
	if o.InstallCRDs {
		args = append(args, "--install-crds")
	}
	if o.Webhook {
		args = append(args, "--webhook")
	}
	if o.WebhookSecret != WebhookSecretName {
		args = append(args, "--webhook-secret", o.WebhookSecret)
	}
	if o.Plan {
		args = append(args, "--plan")
	}
	if o.PlanDryRun {
		args = append(args, "--plan-dry-run")
	}
	return strings.Join(args, " ")
}

// Generate loads the folders of o.Templates and returns the least RBAC
// that serving exactly them takes, as a YAML stream (see docs/rbac.md).
func Generate(o Options) ([]byte, error) {
	o.defaults()
	if errs := validation.IsDNS1123Subdomain(o.ServiceAccount); len(errs) > 0 {
		return nil, fmt.Errorf("--service-account %q: %s", o.ServiceAccount, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("--namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if sa := o.DefaultServiceAccount; sa != "" {
		if errs := validation.IsDNS1123Subdomain(sa); len(errs) > 0 {
			return nil, fmt.Errorf("--default-service-account %q: %s", sa, strings.Join(errs, "; "))
		}
		if sa == o.ServiceAccount {
			return nil, fmt.Errorf("--default-service-account %q is the operator's own ServiceAccount: the kinds' identity must be an account of its own", sa)
		}
	}
	if _, err := inventory.Name(o.FieldManager); err != nil {
		return nil, fmt.Errorf("--field-manager: %w", err)
	}
	kinds, err := catalog.LoadEvery(o.Templates)
	if err != nil {
		return nil, err
	}
	var folders []*Folder
	var errs []error
	for _, k := range kinds {
		f, err := AnalyzeFolder(k)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		folders = append(folders, f)
	}
	errs = append(errs, checkAccounts(o, folders)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	res, err := NewResources(o.CRDs...)
	if err != nil {
		return nil, err
	}
	res.Warn = o.Warn
	if o.Plan || o.PlanDryRun {
		return PlanObjects(o, folders, res).YAML()
	}
	return Objects(o, folders, res).YAML()
}

// KindAccount is the ServiceAccount generated for folder f under a
// default account when its kind.yaml names none: <name>-kind-<folder>, the
// name of its role.
func (o Options) KindAccount(f *Folder) string {
	o.defaults()
	return o.Name + "-kind-" + f.Kind.Name
}

// checkAccounts refuses the accounts that would give one kind's rights to
// another: a folder that names the operator's own account or the default
// one (which every kind without an account of its own runs as), and a
// generated account that is not a valid name or that another folder names.
func checkAccounts(o Options, folders []*Folder) []error {
	named := map[string]string{} // account -> a folder that names it
	for _, f := range folders {
		if sa := f.Kind.Spec.ServiceAccountName; sa != "" {
			named[sa] = f.Path()
		}
	}
	var errs []error
	for _, f := range folders {
		kindYAML := f.Path() + "/kind.yaml"
		switch sa := f.Kind.Spec.ServiceAccountName; {
		case sa == o.ServiceAccount:
			errs = append(errs, fmt.Errorf("%s: serviceAccountName %q is the operator's own ServiceAccount: a kind's identity must be an account of its own", kindYAML, sa))
		case sa != "" && sa == o.DefaultServiceAccount:
			errs = append(errs, fmt.Errorf("%s: serviceAccountName %q is --default-service-account, the account of every kind that has none of its own: it holds no right; name an account of this kind's own, or none (operator rbac generates one)", kindYAML, sa))
		case sa == "" && o.DefaultServiceAccount != "":
			gen := o.KindAccount(f)
			if verrs := validation.IsDNS1123Subdomain(gen); len(verrs) > 0 {
				errs = append(errs, fmt.Errorf("%s: the folder's name makes no ServiceAccount name (%q: %s); name one in kind.yaml serviceAccountName", f.Path(), gen, strings.Join(verrs, "; ")))
			} else if other, ok := named[gen]; ok {
				errs = append(errs, fmt.Errorf("%s: the account generated for this folder, %q, is the serviceAccountName of %s: one kind would have the other's rights; rename one", f.Path(), gen, other))
			} else if gen == o.ServiceAccount || gen == o.DefaultServiceAccount {
				errs = append(errs, fmt.Errorf("%s: the account generated for this folder, %q, is the operator's or the default one; rename the folder or --name", f.Path(), gen))
			}
		}
	}
	return errs
}

// Object is one generated object and the comment lines before it.
type Object struct {
	Comment []string
	Object  any
}

// Stream is the generated objects, in order.
type Stream struct {
	Command string
	Objects []Object
}

// Objects builds the RBAC of folders for the operator described by o:
//
//   - ClusterRole and ClusterRoleBinding <name>: the operator's account,
//     cluster-wide: every kind it serves itself (watch, status, finalizers,
//     children, lookups), the watches of the children of kinds that run
//     under an identity of their own, Events, and the reviews that guard
//     its metrics;
//   - Role and RoleBinding <name> in the operator's namespace: reading its
//     kind folders (ConfigMaps), writing its inventory ConfigMap by name,
//     its Lease, and impersonate on exactly the kinds' ServiceAccounts (get
//     too on those that folders name, to read their agreement);
//   - the inventory ConfigMap, so that the Role needs no create;
//   - for each folder with serviceAccountName X, or, under
//     o.DefaultServiceAccount, for every other folder with its own account
//     X = <name>-kind-<folder>: the ServiceAccount X, annotated with the
//     kinds it agrees to serve, and ClusterRole and ClusterRoleBinding
//     <name>-kind-<folder> for X with what the kind does;
//   - the default account itself, with no role: a kind that no account
//     agrees to serve can do nothing.
func Objects(o Options, folders []*Folder, res *Resources) *Stream {
	o.defaults()
	sort.Slice(folders, func(i, j int) bool { return folders[i].Kind.Name < folders[j].Kind.Name })
	p := plan(o, folders, res)
	var paths []string
	for _, f := range folders {
		paths = append(paths, f.Path())
	}
	s := &Stream{Command: o.Command()}
	s.addOperator(o, p, strings.Join(paths, ", "))
	s.addIdentities(o, p)
	return s
}

// identity is a folder that runs as an account of its own, and its rules.
type identity struct {
	folder  *Folder
	account string
	grants  *grants
}

// rbacPlan is who gets what, before it is written as objects.
type rbacPlan struct {
	cluster, own *grants // the operator's, cluster-wide and in its namespace
	identities   []identity
	accounts     map[string][]*Folder // ServiceAccount -> its folders
	named        map[string][]string  // ServiceAccount -> the kinds whose folders name it
	generated    map[string]bool      // ServiceAccounts made for a folder (KindAccount)
	inventory    string
}

// plan works out the operator's grants and each identity's.
func plan(o Options, folders []*Folder, res *Resources) *rbacPlan {
	inventoryName, _ := inventory.Name(o.FieldManager) // checked by Generate
	p := &rbacPlan{cluster: newGrants(), own: newGrants(), accounts: map[string][]*Folder{}, named: map[string][]string{},
		generated: map[string]bool{}, inventory: inventoryName}
	p.cluster.add(schema.GroupResource{Resource: "events"}, whyOwn, "Events on the objects, in their namespaces", verbsEvents...)
	p.cluster.add(schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}, whyOwn, "run --metrics-secure: who scrapes /metrics", verbsCreate...)
	p.cluster.add(schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, whyOwn, "run --metrics-secure: whether they may", verbsCreate...)
	p.own.add(schema.GroupResource{Resource: "configmaps"}, whyOwn, "kind folders delivered as ConfigMaps, read only", verbsRead...)
	p.own.addNamed(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbsInventory, ResourceNames: []string{inventoryName}},
		fmt.Sprintf("core/configmaps %s [%s]: the inventory ConfigMap (created below: no create right on ConfigMaps here)", inventoryName, strings.Join(verbsInventory, " ")))
	p.own.add(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, whyOwn, "leader election, and run --sharding: the shards' Leases, watched, dead ones deleted", verbsLeases...)
	p.own.add(schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}, whyOwn, "the kinds' revisions: each version of a folder served, numbered, pruned past revisionHistoryLimit, and their rollout state patched on them (docs/rollout.md)", verbsRevisions...)
	if o.InstallCRDs {
		if err := addCRDs(p.cluster, folders); err != nil {
			o.warn(err.Error())
		}
	}
	if o.Webhook || slices.ContainsFunc(folders, func(f *Folder) bool { return f.Kind.Converter() != nil }) {
		// That Secret only, by name: the webhook reads it with a field
		// selector on its name (kube.SecretListWatch), so that list and
		// watch too can be restricted. Create cannot be (RBAC does not know
		// the name of what is created); it reads nothing.
		p.own.addNamed(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: verbsWebhookSecret, ResourceNames: []string{o.WebhookSecret}},
			fmt.Sprintf("core/secrets %s [%s]: run --webhook-bind-address: the conversion webhook's CA and certificate, kept in this Secret that every replica serves",
				o.WebhookSecret, strings.Join(verbsWebhookSecret, " ")))
		p.own.add(schema.GroupResource{Resource: "secrets"}, whyOwn,
			"run --webhook-bind-address: creates the webhook's Secret "+o.WebhookSecret+" (RBAC cannot restrict create by name; it reads nothing)", verbsCreate...)
	}
	if def := o.DefaultServiceAccount; def != "" {
		// Impersonated, and so the identity of every kind no account
		// agrees to serve, with no role: such a kind is refused
		// (KindForbidden) until it gets an account of its own.
		p.accounts[def] = nil
	}
	for _, f := range folders {
		sa := f.Kind.Spec.ServiceAccountName
		if sa == "" && o.DefaultServiceAccount != "" {
			sa = o.KindAccount(f)
			p.generated[sa] = true
		}
		if sa == "" {
			addKind(p.cluster, f, res)
			continue
		}
		p.named[sa] = append(p.named[sa], f.Kind.GVK.GroupKind().String())
		addChildWatches(p.cluster, f, res)
		g := newGrants()
		addKind(g, f, res)
		p.identities = append(p.identities, identity{f, sa, g})
		p.accounts[sa] = append(p.accounts[sa], f)
	}
	if names := sortedKeys(p.accounts); len(names) > 0 {
		var why []string
		for _, sa := range names {
			if len(p.accounts[sa]) == 0 {
				why = append(why, fmt.Sprintf("core/serviceaccounts %s [impersonate]: the identity of every kind no account agrees to serve (run --default-service-account), with no right", sa))
				continue
			}
			why = append(why, fmt.Sprintf("core/serviceaccounts %s [impersonate]: the identity of folder %s (%s)",
				sa, folderNames(p.accounts[sa]), whyAccount(sa, p.named, p.generated)))
		}
		p.own.addNamed(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}, ResourceNames: names}, why...)
	}
	switch agree := sortedKeys(p.named); {
	case o.DefaultServiceAccount != "":
		// run lists them, to find the one that agrees to serve a kind whose
		// folder names none (engine/controller's agreements).
		p.own.add(schema.GroupResource{Resource: "serviceaccounts"}, whyOwn,
			fmt.Sprintf("which account agrees to serve each kind (annotation %s), read once per sync of the folders", annotationServes), "list")
	case len(agree) > 0:
		p.own.addNamed(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get"}, ResourceNames: agree},
			fmt.Sprintf("core/serviceaccounts %s [get]: whether they agree to serve the kinds that name them (annotation %s)", strings.Join(agree, ","), annotationServes))
	}
	return p
}

func generated(from string) string {
	return "Generated by `operator rbac` from " + from + ". Do not edit."
}

// addOperator writes the operator's roles, their bindings and its inventory.
func (s *Stream) addOperator(o Options, p *rbacPlan, from string) {
	operator := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: o.ServiceAccount, Namespace: o.Namespace}
	s.add(append([]string{generated(from),
		fmt.Sprintf("ClusterRole %s: what the operator's ServiceAccount %s/%s does cluster-wide.", o.Name, o.Namespace, o.ServiceAccount)},
		indent(p.cluster.comments())...),
		&rbacv1.ClusterRole{TypeMeta: typeMeta("ClusterRole"), ObjectMeta: metav1.ObjectMeta{Name: o.Name}, Rules: p.cluster.rules()})
	s.add([]string{generated(from), fmt.Sprintf("Grants ClusterRole %s to the operator's ServiceAccount %s/%s.", o.Name, o.Namespace, o.ServiceAccount)},
		&rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("ClusterRoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: o.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: o.Name},
			Subjects: []rbacv1.Subject{operator}})
	s.add(append([]string{generated(from),
		fmt.Sprintf("Role %s: what the operator's ServiceAccount does in its own namespace %s only.", o.Name, o.Namespace)},
		indent(p.own.comments())...),
		&rbacv1.Role{TypeMeta: typeMeta("Role"), ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace}, Rules: p.own.rules()})
	s.add([]string{generated(from), fmt.Sprintf("Grants Role %s to the operator's ServiceAccount %s/%s.", o.Name, o.Namespace, o.ServiceAccount)},
		&rbacv1.RoleBinding{TypeMeta: typeMeta("RoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: o.Name},
			Subjects: []rbacv1.Subject{operator}})
	s.add([]string{generated(from), fmt.Sprintf("ConfigMap %s: the operator's inventory (run --field-manager %s), made here so that its Role may write it by name only.",
		p.inventory, o.FieldManager)},
		inventory.ConfigMap(o.Namespace, p.inventory))
}

// addIdentities writes the kinds' ServiceAccounts, their roles and bindings.
func (s *Stream) addIdentities(o Options, p *rbacPlan) {
	for _, sa := range sortedKeys(p.accounts) {
		sao := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: o.Namespace},
			// Only impersonated: no Pod needs its token.
			AutomountServiceAccountToken: ptr.To(false)}
		if kinds := p.named[sa]; len(kinds) > 0 {
			sort.Strings(kinds)
			sao.Annotations = map[string]string{annotationServes: strings.Join(kinds, ",")}
		}
		if len(p.accounts[sa]) == 0 {
			s.add([]string{"Generated by `operator rbac --default-service-account " + sa + "`. Do not edit.",
				fmt.Sprintf("ServiceAccount %s: the identity of every kind that no account agrees to serve (run --default-service-account). It holds no right: such a kind is refused until it is given an account of its own.", sa)}, sao)
			continue
		}
		s.add([]string{generated(folderPaths(p.accounts[sa])),
			fmt.Sprintf("ServiceAccount %s: the identity the operator impersonates for every cluster call of folder %s (%s).",
				sa, folderNames(p.accounts[sa]), whyAccount(sa, p.named, p.generated))}, sao)
	}
	for _, id := range p.identities {
		f, sa := id.folder, id.account
		name := o.Name + "-kind-" + f.Kind.Name
		s.add(append([]string{generated(f.Path()),
			fmt.Sprintf("ClusterRole %s: what folder %s (%s) does as ServiceAccount %s/%s.", name, f.Kind.Name, kindString(f.Kind.GVK.GroupKind()), o.Namespace, sa)},
			indent(id.grants.comments())...),
			&rbacv1.ClusterRole{TypeMeta: typeMeta("ClusterRole"), ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: id.grants.rules()})
		s.add([]string{generated(f.Path()), fmt.Sprintf("Grants ClusterRole %s to ServiceAccount %s/%s.", name, o.Namespace, sa)},
			&rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("ClusterRoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: o.Namespace}}})
	}
}

// annotationServes is engine/controller's AnnotationServes, which this
// package cannot import (the controller links client-go's informers).
const annotationServes = "operator.tmplop.io/serves"

// whyAccount says how folders come to run as sa.
func whyAccount(sa string, named map[string][]string, generated map[string]bool) string {
	switch {
	case generated[sa]:
		return "its own, generated for the folder, which names none: it agrees to serve the folder's kind"
	case len(named[sa]) > 0:
		return "kind.yaml serviceAccountName"
	}
	return "run --default-service-account"
}

func folderNames(fs []*Folder) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Kind.Name)
	}
	return strings.Join(out, ", ")
}

func folderPaths(fs []*Folder) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path())
	}
	return strings.Join(out, ", ")
}

func (s *Stream) add(comment []string, obj any) {
	s.Objects = append(s.Objects, Object{Comment: comment, Object: obj})
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: kind}
}

func indent(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = "  " + l
	}
	return out
}

// YAML is the stream as documents separated by ---, each after its comment.
func (s *Stream) YAML() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Least-privilege RBAC for the operator, generated by:\n#   %s\n", s.Command)
	for _, o := range s.Objects {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		for _, c := range o.Comment {
			b.WriteString(strings.TrimRight("# "+c, " ") + "\n")
		}
		b.Write(data)
	}
	return b.Bytes(), nil
}
