package rbac

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The verbs of each use the operator makes of a resource. They follow the
// calls of engine/controller, engine/reconcile, engine/apply,
// engine/inventory and engine/status (docs/rbac.md says which call needs
// which verb).
var (
	// The watched kind: its informer (list, watch), the parent re-read of
	// the orphan checks (get), and the finalizer and prune-held annotation
	// written by server-side apply (patch).
	verbsKind = []string{"get", "list", "watch", "patch"}
	// <resource>/status: status written by server-side apply through the
	// status subresource.
	verbsStatus = []string{"get", "patch", "update"}
	// <resource>/finalizers: children carry an owner reference with
	// blockOwnerDeletion, which the OwnerReferencesPermissionEnforcement
	// admission plugin allows only to who may update the owner's
	// finalizers.
	verbsFinalizers = []string{"update"}
	// Children: watched (list, watch), applied (patch, and create when the
	// apply creates), pruned (delete), listed live on finalize.
	verbsChild = []string{"get", "list", "watch", "create", "patch", "delete"}
	// Read only: lookups, and the children of kinds that write them under
	// an identity of their own (the operator still watches them).
	verbsRead = []string{"get", "list", "watch"}
	// Events, written by the operator's recorder in the objects' namespaces
	// (client-go's core/v1 event sink: create, and patch or update of a
	// repeated Event).
	verbsEvents = []string{"create", "patch", "update"}
	// The inventory ConfigMap, by name: read, and merged into (a merge
	// patch that only adds keys).
	verbsInventory = []string{"get", "patch"}
	// verbsWebhookSecret: read, watch and renew the webhook's Secret.
	verbsWebhookSecret = []string{"get", "list", "update", "watch"}
	// TokenReviews and SubjectAccessReviews are only created.
	verbsCreate = []string{"create"}
	// Leader election, and the shards of a ring (run --sharding): each
	// replica's Lease, the others' watched, dead ones deleted.
	verbsLeases = []string{"create", "delete", "get", "list", "update", "watch"}
	// verbsRevisions: the kinds' revision records (engine/revision), listed
	// by kind, created, renumbered (update) when two replicas gave one
	// number at once, deleted past the history limit, and their rollout
	// state (engine/rollout: an annotation and two labels) written with a
	// merge patch of their metadata, by the controller and by `operator
	// rollout pause|resume|undo`; a kind that rolls out in steps watches
	// their metadata, where its rollout is kept.
	verbsRevisions = []string{"create", "delete", "list", "patch", "update", "watch"}
)

// Roles of a resource in a grant, in the order comments list them.
const (
	whyKind       = "watched kind of"
	whyStatus     = "status of"
	whyFinalizers = "blockOwnerDeletion of the children of"
	whyChild      = "child of"
	whyChildWatch = "child (watched only) of"
	whyLookup     = "lookup of"
	whyOwn        = "" // the operator's own use, said in full
)

var whyOrder = []string{whyKind, whyStatus, whyFinalizers, whyChild, whyChildWatch, whyLookup, whyOwn}

type resourceKey struct{ group, resource string }

func (k resourceKey) String() string {
	g := k.group
	if g == "" {
		g = "core"
	}
	return g + "/" + k.resource
}

// grants accumulates the verbs of a role, resource by resource, with why.
type grants struct {
	verbs map[resourceKey]map[string]bool
	why   map[resourceKey]map[string]map[string]bool // role -> folders
	// names are rules restricted to resourceNames, kept apart.
	names []rbacv1.PolicyRule
	// namesWhy documents names, one line each.
	namesWhy []string
}

func newGrants() *grants {
	return &grants{verbs: map[resourceKey]map[string]bool{}, why: map[resourceKey]map[string]map[string]bool{}}
}

func (g *grants) add(gr schema.GroupResource, role, who string, verbs ...string) {
	k := resourceKey{gr.Group, gr.Resource}
	if g.verbs[k] == nil {
		g.verbs[k] = map[string]bool{}
		g.why[k] = map[string]map[string]bool{}
	}
	for _, v := range verbs {
		g.verbs[k][v] = true
	}
	if g.why[k][role] == nil {
		g.why[k][role] = map[string]bool{}
	}
	g.why[k][role][who] = true
}

// rules returns the policy rules: one per group and set of verbs, listing
// its resources, sorted by group, then resources; verbs sorted.
func (g *grants) rules() []rbacv1.PolicyRule {
	type key struct{ group, verbs string }
	byKey := map[key][]string{}
	for rk, vs := range g.verbs {
		k := key{rk.group, strings.Join(sortedKeys(vs), ",")}
		byKey[k] = append(byKey[k], rk.resource)
	}
	rules := []rbacv1.PolicyRule{}
	for k, resources := range byKey {
		sort.Strings(resources)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: resources, Verbs: strings.Split(k.verbs, ",")})
	}
	rules = append(rules, g.names...)
	sort.SliceStable(rules, func(i, j int) bool {
		a, b := rules[i], rules[j]
		if a.APIGroups[0] != b.APIGroups[0] {
			return a.APIGroups[0] < b.APIGroups[0]
		}
		if ra, rb := strings.Join(a.Resources, ","), strings.Join(b.Resources, ","); ra != rb {
			return ra < rb
		}
		return strings.Join(a.Verbs, ",") < strings.Join(b.Verbs, ",")
	})
	return rules
}

// comments explain each resource of the role: "core/pods: child of at".
func (g *grants) comments() []string {
	keys := make([]resourceKey, 0, len(g.why))
	for k := range g.why {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].group != keys[j].group {
			return keys[i].group < keys[j].group
		}
		return keys[i].resource < keys[j].resource
	})
	var out []string
	for _, k := range keys {
		var parts []string
		for _, role := range whyOrder {
			who := g.why[k][role]
			switch {
			case len(who) == 0:
			case role == whyOwn:
				parts = append(parts, sortedKeys(who)...)
			default:
				parts = append(parts, role+" "+strings.Join(sortedKeys(who), ", "))
			}
		}
		out = append(out, fmt.Sprintf("%s [%s]: %s", k, strings.Join(sortedKeys(g.verbs[k]), " "), strings.Join(parts, "; ")))
	}
	return append(out, g.namesWhy...)
}

// addNamed adds a rule restricted to resourceNames, with its comment lines.
func (g *grants) addNamed(r rbacv1.PolicyRule, why ...string) {
	g.names = append(g.names, r)
	g.namesWhy = append(g.namesWhy, why...)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// addKind grants what serving folder f takes: its kind, status and
// finalizers, its children and its lookups.
func addKind(g *grants, f *Folder, res *Resources) {
	k, who := f.Kind, f.Kind.Name
	kind := res.Resource(k.GVK.GroupKind())
	g.add(kind, whyKind, who, verbsKind...)
	if k.Converter() != nil {
		// Its storage migration writes each object back as it was read
		// (engine/migrate): an update, not an apply.
		g.add(kind, whyKind, who, "update")
	}
	if !k.BuiltIn() {
		// The operator never writes the status of a built-in kind.
		g.add(subresource(kind, "status"), whyStatus, who, verbsStatus...)
	}
	if len(f.Children) > 0 {
		g.add(subresource(kind, "finalizers"), whyFinalizers, who, verbsFinalizers...)
	}
	for _, c := range f.Children {
		g.add(res.Resource(schema.FromAPIVersionAndKind(c.APIVersion, c.Kind).GroupKind()), whyChild, who, verbsChild...)
	}
	for _, l := range k.Spec.Lookups {
		g.add(res.Resource(schema.FromAPIVersionAndKind(l.APIVersion, l.Kind).GroupKind()), whyLookup, who, verbsRead...)
	}
}

// addChildWatches grants the operator the reads of the children of a
// folder that writes them under an identity of its own: the watches of
// children are the operator's, shared by every kind.
func addChildWatches(g *grants, f *Folder, res *Resources) {
	for _, c := range f.Children {
		g.add(res.Resource(schema.FromAPIVersionAndKind(c.APIVersion, c.Kind).GroupKind()), whyChildWatch, f.Kind.Name, verbsRead...)
	}
}

func subresource(gr schema.GroupResource, sub string) schema.GroupResource {
	return schema.GroupResource{Group: gr.Group, Resource: gr.Resource + "/" + sub}
}
