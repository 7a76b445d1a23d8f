package rbac

import (
	"fmt"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/inventory"
)

// The verbs of `operator plan` (engine/plan): it reads the objects, their
// children and lookups, and the inventory; with Options.PlanDryRun it also
// applies each changed child with dryRun=All, which the API server
// authorizes as the apply itself: patch, and create for a child that does
// not exist yet. RBAC has no verb for "dry-run only".
var (
	verbsPlanRead   = []string{"get", "list", "watch"}
	verbsPlanDryRun = []string{"create", "patch"}
)

// PlanName is the name of `operator rbac --plan`'s roles.
func (o Options) PlanName() string {
	o.defaults()
	return o.Name + "-plan"
}

// PlanObjects are the roles of `operator plan` over folders: a ClusterRole
// that reads the folders' kinds, children and lookups (and, with
// o.PlanDryRun, may dry-run apply the children), and a Role in the
// operator's namespace that reads its inventory. They are not bound: bind
// them to the identity that runs the plan (a CI job's).
func PlanObjects(o Options, folders []*Folder, res *Resources) *Stream {
	o.defaults()
	sort.Slice(folders, func(i, j int) bool { return folders[i].Kind.Name < folders[j].Kind.Name })
	g := newGrants()
	var paths []string
	for _, f := range folders {
		paths = append(paths, f.Path())
		who := f.Kind.Name
		g.add(res.Resource(f.Kind.GVK.GroupKind()), whyKind, who, verbsPlanRead...)
		for _, c := range f.Children {
			gr := res.Resource(schema.FromAPIVersionAndKind(c.APIVersion, c.Kind).GroupKind())
			g.add(gr, whyChild, who, verbsPlanRead...)
			if o.PlanDryRun {
				g.add(gr, whyChild, who, verbsPlanDryRun...)
			}
		}
		for _, l := range f.Kind.Spec.Lookups {
			g.add(res.Resource(schema.FromAPIVersionAndKind(l.APIVersion, l.Kind).GroupKind()), whyLookup, who, verbsPlanRead...)
		}
	}
	from := strings.Join(paths, ", ")
	what := "reads the objects of these kinds, their children and their lookups, and compares changed children locally (a \"local diff\": no dry-run)"
	if o.PlanDryRun {
		what = "reads the objects of these kinds, their children and their lookups, and server-side applies changed children with dryRun=All, which RBAC authorizes as create and patch: this role can write them"
	}
	s := &Stream{Command: o.Command()}
	s.add(append([]string{generated(from),
		fmt.Sprintf("ClusterRole %s: `operator plan` %s. Bind it to the identity that runs the plan.", o.PlanName(), what)},
		indent(g.comments())...),
		&rbacv1.ClusterRole{TypeMeta: typeMeta("ClusterRole"), ObjectMeta: metav1.ObjectMeta{Name: o.PlanName()}, Rules: g.rules()})
	name, _ := inventory.Name(o.FieldManager) // checked by Generate
	s.add([]string{generated(from),
		fmt.Sprintf("Role %s: `operator plan` reads the operator's inventory ConfigMap %s in %s (the kinds of children it may prune) and lists the kinds' revision records there (the status.observedRevision a reconcile writes).", o.PlanName(), name, o.Namespace)},
		&rbacv1.Role{TypeMeta: typeMeta("Role"), ObjectMeta: metav1.ObjectMeta{Name: o.PlanName(), Namespace: o.Namespace},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: []string{name}},
				{APIGroups: []string{"apps"}, Resources: []string{"controllerrevisions"}, Verbs: []string{"list"}},
			}})
	return s
}
