package rbac

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	crdgen "github.com/tmplop/operator/engine/crd"
)

// Defaults of Options.
const (
	DefaultNamespace      = "operator-system"
	DefaultServiceAccount = "operator"
	DefaultName           = "operator"
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
	// Name prefixes the names of the roles and bindings.
	Name string
	// Warn receives warnings (resources guessed); nil drops them.
	Warn func(msg string)
	// InstallCRDs adds what `run --install-crds` needs: get and patch on
	// exactly the folders' CRDs, and create (which RBAC cannot restrict by
	// name; creating cannot change an existing CRD).
	InstallCRDs bool
}

func (o *Options) warn(msg string) {
	if o.Warn != nil {
		o.Warn(msg)
	}
}

// addCRDs grants `run --install-crds` its calls on the folders' own CRDs.
func addCRDs(g *grants, folders []*Folder) error {
	var names, from []string
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
	if o.InstallCRDs {
		args = append(args, "--install-crds")
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
	kinds, err := LoadFolders(o.Templates)
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
		if sa := k.Spec.ServiceAccountName; sa == o.ServiceAccount {
			errs = append(errs, fmt.Errorf("%s: serviceAccountName %q is the operator's own ServiceAccount: a kind's identity must be an account of its own",
				k.Dir+"/kind.yaml", sa))
		}
		folders = append(folders, f)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	res, err := NewResources(o.CRDs...)
	if err != nil {
		return nil, err
	}
	res.Warn = o.Warn
	return Objects(o, folders, res).YAML()
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
//     children, lookups), the watches of the children of kinds that have an
//     identity of their own, and Events;
//   - Role and RoleBinding <name> in the operator's namespace: its
//     ConfigMaps and Leases, and impersonate on exactly the
//     ServiceAccounts of kind.yaml serviceAccountName;
//   - for each folder with serviceAccountName X: the ServiceAccount X,
//     and ClusterRole and ClusterRoleBinding <name>-kind-<folder> for X
//     with what the kind does.
func Objects(o Options, folders []*Folder, res *Resources) *Stream {
	o.defaults()
	sort.Slice(folders, func(i, j int) bool { return folders[i].Kind.Name < folders[j].Kind.Name })
	var paths []string
	for _, f := range folders {
		paths = append(paths, f.Path())
	}
	from := strings.Join(paths, ", ")
	operator := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: o.ServiceAccount, Namespace: o.Namespace}

	cluster := newGrants()
	cluster.add(schema.GroupResource{Resource: "events"}, whyOwn, "Events on the objects, in their namespaces", verbsEvents...)
	own := newGrants()
	own.add(schema.GroupResource{Resource: "configmaps"}, whyOwn, "the inventory ConfigMap, kind folders delivered as ConfigMaps", verbsConfigMaps...)
	own.add(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, whyOwn, "leader election", verbsLeases...)

	if o.InstallCRDs {
		if err := addCRDs(cluster, folders); err != nil {
			o.warn(err.Error())
		}
	}

	type identity struct {
		folder *Folder
		grants *grants
	}
	var identities []identity
	accounts := map[string][]string{} // ServiceAccount -> folders
	for _, f := range folders {
		sa := f.Kind.Spec.ServiceAccountName
		if sa == "" {
			addKind(cluster, f, res)
			continue
		}
		addChildWatches(cluster, f, res)
		g := newGrants()
		addKind(g, f, res)
		identities = append(identities, identity{f, g})
		accounts[sa] = append(accounts[sa], f.Kind.Name)
	}
	if len(accounts) > 0 {
		names := make([]string, 0, len(accounts))
		for sa := range accounts {
			names = append(names, sa)
		}
		sort.Strings(names)
		own.names = append(own.names, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
			Verbs: []string{"impersonate"}, ResourceNames: names})
		for _, sa := range names {
			own.namesWhy = append(own.namesWhy, fmt.Sprintf("core/serviceaccounts %s [impersonate]: the identity of folder %s (kind.yaml serviceAccountName)",
				sa, strings.Join(accounts[sa], ", ")))
		}
	}

	generated := func(from string) string { return "Generated by `operator rbac` from " + from + ". Do not edit." }
	s := &Stream{Command: o.Command()}
	s.add(append([]string{generated(from),
		fmt.Sprintf("ClusterRole %s: what the operator's ServiceAccount %s/%s does cluster-wide.", o.Name, o.Namespace, o.ServiceAccount)},
		indent(cluster.comments())...),
		&rbacv1.ClusterRole{TypeMeta: typeMeta("ClusterRole"), ObjectMeta: metav1.ObjectMeta{Name: o.Name}, Rules: cluster.rules()})
	s.add([]string{generated(from), fmt.Sprintf("Grants ClusterRole %s to the operator's ServiceAccount %s/%s.", o.Name, o.Namespace, o.ServiceAccount)},
		&rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("ClusterRoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: o.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: o.Name},
			Subjects: []rbacv1.Subject{operator}})
	s.add(append([]string{generated(from),
		fmt.Sprintf("Role %s: what the operator's ServiceAccount does in its own namespace %s only.", o.Name, o.Namespace)},
		indent(own.comments())...),
		&rbacv1.Role{TypeMeta: typeMeta("Role"), ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace}, Rules: own.rules()})
	s.add([]string{generated(from), fmt.Sprintf("Grants Role %s to the operator's ServiceAccount %s/%s.", o.Name, o.Namespace, o.ServiceAccount)},
		&rbacv1.RoleBinding{TypeMeta: typeMeta("RoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: o.Name},
			Subjects: []rbacv1.Subject{operator}})

	madeSA := map[string]bool{}
	for _, id := range identities {
		f, sa := id.folder, id.folder.Kind.Spec.ServiceAccountName
		name := o.Name + "-kind-" + f.Kind.Name
		if !madeSA[sa] {
			madeSA[sa] = true
			var paths []string
			for _, other := range identities {
				if other.folder.Kind.Spec.ServiceAccountName == sa {
					paths = append(paths, other.folder.Path())
				}
			}
			s.add([]string{generated(strings.Join(paths, ", ")),
				fmt.Sprintf("ServiceAccount %s: the identity the operator impersonates for every cluster call of folder %s (kind.yaml serviceAccountName).",
					sa, strings.Join(accounts[sa], ", "))},
				&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
					ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: o.Namespace},
					// Only impersonated: no Pod needs its token.
					AutomountServiceAccountToken: ptr.To(false)})
		}
		s.add(append([]string{generated(f.Path()),
			fmt.Sprintf("ClusterRole %s: what folder %s (%s) does as ServiceAccount %s/%s.", name, f.Kind.Name, kindString(f.Kind.GVK.GroupKind()), o.Namespace, sa)},
			indent(id.grants.comments())...),
			&rbacv1.ClusterRole{TypeMeta: typeMeta("ClusterRole"), ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: id.grants.rules()})
		s.add([]string{generated(f.Path()), fmt.Sprintf("Grants ClusterRole %s to ServiceAccount %s/%s.", name, o.Namespace, sa)},
			&rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("ClusterRoleBinding"), ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: o.Namespace}}})
	}
	return s
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
