package plan

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/reconcile"
	"github.com/tmplop/operator/engine/render"
)

// Action is what a reconcile would do to one child.
type Action string

// The actions.
const (
	Create    Action = "create"
	Change    Action = "change"
	Unchanged Action = "unchanged"
	Prune     Action = "prune"
)

// Child is the plan of one child.
type Child struct {
	// Template is the file that renders it; "" for a pruned child.
	Template   string `json:"template,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Action     Action `json:"action"`
	// Paths are the fields a change changes (Paths), server-set fields
	// left out.
	Paths []string `json:"paths,omitempty"`
	// Diff is a unified diff of the object's YAML, live to planned.
	Diff string `json:"diff,omitempty"`
	// Local is set when the API server refused the dry-run for want of
	// rights: the child was compared without it (the rendered fields
	// merged over the live object), so defaults, admission and the
	// removal of fields no longer rendered are not in the diff.
	Local bool `json:"local,omitempty"`
	// Hook is a chart hook's helm.sh/hook value: applying the child runs
	// the hook.
	Hook string `json:"hook,omitempty"`
	// Note says more: a child deleted to be created anew, an apply that
	// changes nothing.
	Note string `json:"note,omitempty"`
	// Error is why this child cannot be planned (a conflict with an object
	// that is not the parent's, a request the API server refused).
	Error string `json:"error,omitempty"`
	// Held is set on a pruned child whose deletion the deletion guard
	// holds back (Object.PruneHeld): the reconcile leaves it for now.
	Held bool `json:"held,omitempty"`
	// Waits says what a child to create or change waits for (kind.yaml's
	// dependsOn: a child it depends on that is not Current; or its CRD,
	// a child too, not served yet): the reconcile makes the change once
	// that is ready, not now.
	Waits string `json:"waits,omitempty"`
}

// Label names the child as the summary does: "Kind ns/name".
func (c Child) Label() string {
	if c.Namespace == "" {
		return c.Kind + " " + c.Name
	}
	return c.Kind + " " + c.Namespace + "/" + c.Name
}

// Status is the change of the parent's status a reconcile would write.
type Status struct {
	Paths []string `json:"paths"`
	Diff  string   `json:"diff"`
}

// Object is the plan of one object of the kind.
type Object struct {
	Kind      string  `json:"kind"`
	Namespace string  `json:"namespace,omitempty"`
	Name      string  `json:"name"`
	Children  []Child `json:"children,omitempty"`
	// Status is nil when the status would not change.
	Status *Status `json:"status,omitempty"`
	// Finalizer is the finalizer a reconcile would add to the object
	// (reconcile.Finalizer: children outside its namespace, or delete
	// steps with children); "" for none.
	Finalizer string `json:"finalizer,omitempty"`
	// Error is why the object cannot be planned (its render failed): a
	// reconcile would fail the same way.
	Error string `json:"error,omitempty"`
	// Suspended says how the object is suspended (catalog.Kind.SuspendedBy):
	// a reconcile writes nothing for it but its Suspended condition, so
	// the plan lists no change; "" when it is not.
	Suspended string `json:"suspended,omitempty"`
	// PruneHeld is the deletion guard holding the object's prune back
	// (reconcile.Guard); nil when the prune, if any, goes ahead.
	PruneHeld *Hold `json:"pruneHeld,omitempty"`
}

// Hold is the deletion guard holding a prune back: the children it would
// delete (those marked Held) stay until a render after Until agrees.
type Hold struct {
	// Reason and Message are the PruneHeld condition's.
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	// Begins is true when the hold begins with this reconcile: it records
	// the hold on the object (its prune-held annotation, the PruneHeld
	// condition) and in a Warning Event. A hold that began earlier writes
	// nothing new.
	Begins bool `json:"begins,omitempty"`
}

// Counts are an object's changes by action.
type Counts struct {
	Change int `json:"change"`
	Create int `json:"create"`
	Prune  int `json:"prune"`
	// Held are the prunes the deletion guard holds back, not in Prune.
	Held int `json:"held,omitempty"`
	// Waiting are the changes and creations (in Change and Create) that
	// wait for what they depend on.
	Waiting int `json:"waiting,omitempty"`
	Errors  int `json:"errors"`
}

// Add adds o's counts to c.
func (c *Counts) Add(o Counts) {
	c.Change += o.Change
	c.Create += o.Create
	c.Prune += o.Prune
	c.Held += o.Held
	c.Waiting += o.Waiting
	c.Errors += o.Errors
}

// Counts counts o's children by action, and its errors.
func (o *Object) Counts() Counts {
	var c Counts
	if o.Error != "" {
		c.Errors++
	}
	for _, ch := range o.Children {
		if ch.Waits != "" && ch.Error == "" && (ch.Action == Change || ch.Action == Create) {
			c.Waiting++
		}
		switch {
		case ch.Error != "":
			c.Errors++
		case ch.Action == Change:
			c.Change++
		case ch.Action == Create:
			c.Create++
		case ch.Action == Prune && ch.Held:
			c.Held++
		case ch.Action == Prune:
			c.Prune++
		}
	}
	return c
}

// DriftReported reports whether a child of o drifted and its kind only
// reports drift (drift: warn): the reconcile leaves it as it is.
func (o *Object) DriftReported() bool {
	for _, ch := range o.Children {
		if ch.Action == Unchanged && len(ch.Paths) > 0 {
			return true
		}
	}
	return false
}

// Changed reports whether a reconcile of o would write anything, or a
// later one would delete the children whose prune the deletion guard
// holds back now: a plan that would delete children is never "no change".
func (o *Object) Changed() bool {
	c := o.Counts()
	return c.Change+c.Create+c.Prune+c.Held > 0 || o.Status != nil || o.Finalizer != ""
}

// Options are how a plan is made: as the operator would reconcile.
type Options struct {
	// Client makes every request, as the kind's identity (the account it
	// impersonates, so that admission and RBAC are the reconcile's).
	Client *kube.Client
	// Manager is the operator's field manager (run --field-manager): the
	// children's managed-by label and the dry-run's manager.
	Manager string
	// Bounds and Shard are the operator's (ownership.Policy).
	Bounds ownership.Bounds
	Shard  string
	// Budget is the operator's render budget; kind.yaml may override it.
	Budget render.Budget
	// Cluster is what a chart's templates see (.Capabilities).
	Cluster catalog.Cluster
	// Revision is the revision the folder is recorded as, or would be at
	// its first reconcile (engine/revision): each object's reconcile writes
	// it to status.observedRevision. 0: unknown, the field is planned as
	// it is.
	Revision int64
	// Inventory gives the child kinds the kind has ever applied, the
	// prune's scope beside the planned kinds; nil: the planned kinds only.
	Inventory reconcile.Inventory
	// PruneConfirmDelay is the operator's (run --prune-confirm-delay): how
	// long the deletion guard holds a prune back. 0:
	// reconcile.DefaultPruneConfirmDelay.
	PruneConfirmDelay time.Duration
	// Workers plan objects at once (default 8).
	Workers int
	// Local compares every child locally, with no dry-run request.
	Local bool
	// Progress is told after each object is planned; nil: not told.
	Progress func(done, total int)
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Warn is told what the plan could not see; nil: not told.
	Warn func(msg string)
}

// DefaultWorkers is how many objects are planned at once.
const DefaultWorkers = 8

// Objects lists the objects of kind to plan: one (name), the namespace's
// (namespace), or every one ("" for both), as the operator selects them
// (kind.yaml's selector); objects being deleted are left out: their
// reconcile is their finalizer's.
func Objects(ctx context.Context, c *kube.Client, kind *catalog.Kind, namespace, name string) ([]*unstructured.Unstructured, error) {
	m, err := c.Mapping(kind.GVK)
	if err != nil {
		return nil, fmt.Errorf("kind %s: %w", kind.GVK.Kind, err)
	}
	var items []*unstructured.Unstructured
	if name != "" {
		o, err := c.Get(ctx, m, namespace, name)
		if err != nil {
			return nil, fmt.Errorf("get %s %s: %w", kind.GVK.Kind, name, err)
		}
		items = append(items, o)
	} else {
		list, err := c.List(ctx, m, namespace, metav1.ListOptions{LabelSelector: kind.ObjectSelector()})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", m.Resource.GroupResource(), err)
		}
		for i := range list.Items {
			items = append(items, &list.Items[i])
		}
	}
	items = slices.DeleteFunc(items, func(o *unstructured.Unstructured) bool { return o.GetDeletionTimestamp() != nil })
	slices.SortFunc(items, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	return items, nil
}

// planner is one plan of one kind.
type planner struct {
	opts Options
	kind *catalog.Kind
	now  time.Time
	// live are the operator's live children by parent UID, listed once
	// per child kind.
	live map[string]map[apply.Key]*unstructured.Unstructured
}

// rendered is one object's render, between the phases.
type rendered struct {
	obj    *unstructured.Unstructured
	plan   *reconcile.Plan
	lookup render.Lookup
	out    *Object
}

// Run plans objs, objects of kind, in their order. An object that cannot
// be planned carries its error; err is for what stops the whole plan (the
// children cannot be listed).
func Run(ctx context.Context, kind *catalog.Kind, objs []*unstructured.Unstructured, opts Options) ([]Object, error) {
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	p := &planner{opts: opts, kind: kind, now: now()}
	rs := make([]*rendered, len(objs))
	parallel(len(objs), opts.Workers, func(i int) { rs[i] = p.render(ctx, objs[i]) })
	if err := p.listChildren(ctx, rs); err != nil {
		return nil, err
	}
	out := make([]Object, len(objs))
	var mu sync.Mutex
	done := 0
	parallel(len(rs), opts.Workers, func(i int) {
		p.compare(ctx, rs[i])
		out[i] = *rs[i].out
		if opts.Progress != nil {
			mu.Lock()
			done++
			opts.Progress(done, len(rs))
			mu.Unlock()
		}
	})
	return out, nil
}

// parallel runs f(0..n-1) on workers goroutines.
func parallel(n, workers int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// render makes obj's plan as a reconcile does: its lookups, the render,
// the adoption under the operator's policy.
func (p *planner) render(ctx context.Context, obj *unstructured.Unstructured) *rendered {
	r := &rendered{obj: obj, out: &Object{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	if by, what := p.kind.SuspendedBy(obj); by != "" {
		// Nothing of the folder reaches a suspended object until it
		// resumes: no render, no child, no prune.
		r.out.Suspended = what
		return r
	}
	r.lookup = &liveLookup{ctx: ctx, client: p.opts.Client, kind: p.kind, bounds: p.opts.Bounds, parent: obj.GetNamespace()}
	in := render.Input{Lookup: r.lookup, Now: p.now, Budget: p.kind.RenderBudget(p.opts.Budget)}
	pol := ownership.Policy{Manager: p.opts.Manager, Bounds: p.opts.Bounds, Shard: p.opts.Shard}
	plan, err := reconcile.MakePlan(ctx, p.kind, obj, in, p.opts.Cluster, p.opts.Client.Namespaced, pol)
	if err != nil {
		r.out.Error = "render: " + err.Error()
		return r
	}
	r.plan = plan
	return r
}

// listChildren lists, once per child kind in the prune's scope (the
// inventory's and the planned kinds), the operator's children of every
// parent: a request per kind, not per child.
func (p *planner) listChildren(ctx context.Context, rs []*rendered) error {
	gks := map[schema.GroupKind]bool{}
	if p.opts.Inventory != nil && p.kind.Pruning() {
		recorded, err := p.opts.Inventory.ChildKinds(ctx, p.kind.GVK.GroupKind())
		if err != nil {
			return fmt.Errorf("read the inventory: %w", err)
		}
		for _, gk := range recorded {
			gks[gk] = true
		}
	}
	namespaces := map[string]bool{}
	planned := map[schema.GroupKind]bool{}
	for _, r := range rs {
		namespaces[r.obj.GetNamespace()] = true
		if r.plan == nil {
			continue
		}
		for _, c := range r.plan.Children {
			planned[c.Object.GroupVersionKind().GroupKind()] = true
		}
	}
	maps.Copy(gks, planned)
	p.live = map[string]map[apply.Key]*unstructured.Unstructured{}
	for _, gk := range slices.SortedFunc(maps.Keys(gks), func(a, b schema.GroupKind) int { return strings.Compare(a.String(), b.String()) }) {
		m, err := p.opts.Client.PreferredKind(gk)
		if meta.IsNoMatchError(err) {
			continue // not served: none to compare or prune
		}
		if err != nil {
			return fmt.Errorf("map %s: %w", gk, err)
		}
		items, err := p.list(ctx, m, namespaces)
		if apierrors.IsForbidden(err) && !planned[gk] {
			// A kind the templates no longer render, which a role made
			// for these folders (operator rbac --plan) does not cover.
			p.warn(fmt.Sprintf("cannot list the children of kind %s, which no template renders any more (%v): those that remain are not listed as pruned", gk, err))
			continue
		}
		if err != nil {
			return err
		}
		for i := range items {
			o := &items[i]
			uid := o.GetLabels()[ownership.LabelParentUID]
			if p.live[uid] == nil {
				p.live[uid] = map[apply.Key]*unstructured.Unstructured{}
			}
			p.live[uid][apply.Key{GR: m.Resource.GroupResource(), Namespace: o.GetNamespace(), Name: o.GetName()}] = o
		}
	}
	return nil
}

func (p *planner) warn(msg string) {
	if p.opts.Warn != nil {
		p.opts.Warn(msg)
	}
}

// list lists the operator's children of m in every namespace; an identity
// that may not list them cluster-wide lists them in the parents'
// namespaces, where the namespaced children are.
func (p *planner) list(ctx context.Context, m *meta.RESTMapping, namespaces map[string]bool) ([]unstructured.Unstructured, error) {
	opts := metav1.ListOptions{LabelSelector: ownership.ManagedSelector(p.opts.Manager)}
	list, err := p.opts.Client.List(ctx, m, "", opts)
	if err == nil {
		return list.Items, nil
	}
	if !apierrors.IsForbidden(err) || m.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, fmt.Errorf("list %s: %w", m.Resource.GroupResource(), err)
	}
	var out []unstructured.Unstructured
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		list, err := p.opts.Client.List(ctx, m, ns, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s in %s: %w", m.Resource.GroupResource(), ns, err)
		}
		out = append(out, list.Items...)
	}
	return out, nil
}
