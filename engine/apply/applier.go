package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
)

// Cache is what the applier reads of the cluster: informer caches of every
// resource it applies, kept by the controller.
type Cache interface {
	// Ensure watches the resource of m (the preferred version of its
	// group and resource) and waits until its caches have synced.
	Ensure(ctx context.Context, m *meta.RESTMapping) error
	// Get returns one of the operator's children (an object carrying its
	// managed-by label), as last seen; false when there is none. A child
	// the cache keeps as metadata only (one it cannot match to a parent
	// served: anyone may write the label) is read from the API server.
	Get(ctx context.Context, gr schema.GroupResource, namespace, name string) (*unstructured.Unstructured, bool, error)
	// Peek is Get without the content: the child's metadata, from the same
	// watch (the one whose events wake the parent), decoding nothing and
	// reading nothing.
	Peek(gr schema.GroupResource, namespace, name string) (metav1.Object, bool)
	// Occupant returns the metadata of any object of gr, the operator's or
	// not: what a child would overwrite.
	Occupant(gr schema.GroupResource, namespace, name string) (metav1.Object, bool)
	// Children returns the operator's children of gr that carry parentUID.
	Children(gr schema.GroupResource, parentUID types.UID) []Child
	// List returns every one of the operator's children of gr.
	List(gr schema.GroupResource) []Child
}

// Partial is a Cache that holds only some of the operator's children: a
// sharded replica's holds its own shard's, so that a name missing from it
// may still be another shard's child. Missed reads such a name from the
// API server: the object (the live occupant) or nil when there is none.
type Partial interface {
	Missed(ctx context.Context, m *meta.RESTMapping, namespace, name string) (*unstructured.Unstructured, error)
}

// Child is a child as the cache lists it: its metadata and its kind, which
// is all pruning reads.
type Child interface {
	metav1.Object
	GroupVersionKind() schema.GroupVersionKind
}

// Key identifies a child. It has no version: the same object served at two
// versions is one child, so that two folders (or one folder across a CRD's
// version change) never prune each other's objects.
type Key struct {
	GR        schema.GroupResource
	Namespace string
	Name      string
}

func (k Key) String() string {
	if k.Namespace == "" {
		return fmt.Sprintf("%s %s", k.GR, k.Name)
	}
	return fmt.Sprintf("%s %s/%s", k.GR, k.Namespace, k.Name)
}

// Applier applies children and prunes them. It is shared by all workers of
// all kinds; the client is passed per call because each kind has its own.
type Applier struct {
	cache Cache

	// requeue reconciles the parent of a child again (see OwnEvent).
	requeue func(child metav1.Object)

	mu sync.Mutex
	// own is the resourceVersion each child got from our last write, until
	// its watch event arrives: that event is the echo of our own apply and
	// must not reconcile the parent again (an endless loop when the
	// template renders something new every time).
	own map[Key]string
	// inFlight counts the applies of each child waiting for their
	// response; held is the last event that arrived meanwhile, which may be
	// the echo of the apply or someone else's change: the response tells.
	inFlight map[Key]int
	held     map[Key]metav1.Object
}

// NewApplier returns an Applier over cache. requeue is called for a held
// watch event that turned out not to be the echo of an apply.
func NewApplier(cache Cache, requeue func(child metav1.Object)) *Applier {
	return &Applier{cache: cache, requeue: requeue, own: map[Key]string{},
		inFlight: map[Key]int{}, held: map[Key]metav1.Object{}}
}

// Desired is one child ready to apply, after Prepare.
type Desired struct {
	Key     Key
	Mapping *meta.RESTMapping
	Object  *unstructured.Unstructured
	// Live is the operator's live child, nil when there is none.
	Live *unstructured.Unstructured
	// UpToDate is true when the live child already holds what would be
	// applied: no write is needed.
	UpToDate bool
	// Drifted is true when the live child was applied as rendered (its
	// hash is this render's) but no longer holds every value applied:
	// someone edited a field the operator applies. It is not UpToDate.
	Drifted bool
}

// Exists reports whether the child exists.
func (d *Desired) Exists() bool { return d.Live != nil }

// Prepare checks child against the cluster: the object it would overwrite
// must be the parent's (ownership.Claim; a *ownership.ConflictError
// otherwise), and tells whether applying it would change anything.
func (a *Applier) Prepare(ctx context.Context, c *kube.Client, m *meta.RESTMapping, parent, child *unstructured.Unstructured, who ownership.Claimant) (*Desired, error) {
	gr := m.Resource.GroupResource()
	key := Key{GR: gr, Namespace: child.GetNamespace(), Name: child.GetName()}
	preferred, err := c.Preferred(m)
	if err != nil {
		return nil, err
	}
	// Watching from the first apply on is what repairs drift, what lets a
	// later render see the child's status, and what the ownership check
	// reads: it must be complete before anything is applied.
	if err := a.cache.Ensure(ctx, preferred); err != nil {
		return nil, fmt.Errorf("watch %s: %w", gr, err)
	}
	d := &Desired{Key: key, Mapping: m, Object: child}
	// The watches say whether the name is taken and by whom (ours first,
	// then every other object's metadata); the content of our own child is
	// taken only when it is that same object.
	occ, taken := a.cache.Occupant(gr, key.Namespace, key.Name)
	if !taken {
		p, partial := a.cache.(Partial)
		if !partial {
			return d, nil
		}
		live, err := p.Missed(ctx, preferred, key.Namespace, key.Name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", key, err)
		}
		if live == nil {
			return d, nil
		}
		// Another shard's child, or this parent's own child applied by the
		// shard that held it before: the claim tells which.
		if err := ownership.Claim(live, m.GroupVersionKind.GroupKind(), parent, who); err != nil {
			return nil, err
		}
		if live.GetDeletionTimestamp() == nil {
			d.Live = live
			d.UpToDate, d.Drifted = unchanged(live, child)
		}
		return d, nil
	}
	if err := ownership.Claim(occ, m.GroupVersionKind.GroupKind(), parent, who); err != nil {
		return nil, err
	}
	live, ok, err := a.cache.Get(ctx, gr, key.Namespace, key.Name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if !ok {
		return d, nil // not ours: the apply adopts it, with the consent Claim found
	}
	if live.GetUID() != occ.GetUID() {
		// Read after the cache's view (from the server, or the cache
		// moved on): the name changed hands meanwhile, and what holds it
		// now is claimed in its turn.
		if err := ownership.Claim(live, m.GroupVersionKind.GroupKind(), parent, who); err != nil {
			return nil, err
		}
	}
	if live.GetDeletionTimestamp() == nil {
		d.Live = live
		d.UpToDate, d.Drifted = unchanged(live, child)
	}
	return d, nil
}

// Hash identifies the rendered content of d, to compare two renders.
func (d *Desired) Hash() string { return d.Object.GetAnnotations()[ownership.AnnotationHash] }

// Outcome is one applied child.
type Outcome struct {
	Key  Key
	Live *unstructured.Unstructured
	// Skipped is true when the child was already as rendered and no write
	// was made.
	Skipped bool
}

// Apply server-side applies d unless it is up to date. An update carries
// the live object's UID: if the object was deleted and re-created by
// someone else since the cache saw it, the API server refuses instead of
// taking the newcomer over.
func (a *Applier) Apply(ctx context.Context, c *kube.Client, d *Desired) (Outcome, error) {
	if d.UpToDate {
		return Outcome{Key: d.Key, Live: d.Live, Skipped: true}, nil
	}
	obj := d.Object
	if d.Live != nil {
		obj = obj.DeepCopy()
		obj.SetUID(d.Live.GetUID())
	}
	a.mu.Lock()
	a.inFlight[d.Key]++
	a.mu.Unlock()
	live, err := c.ApplyMapped(ctx, d.Mapping, obj)
	a.mu.Lock()
	a.inFlight[d.Key]--
	if a.inFlight[d.Key] <= 0 {
		delete(a.inFlight, d.Key)
	}
	held := a.held[d.Key]
	delete(a.held, d.Key)
	if err == nil {
		switch {
		case held != nil && held.GetResourceVersion() == live.GetResourceVersion():
			held = nil // the echo came first
		case d.Live == nil || live.GetResourceVersion() != d.Live.GetResourceVersion():
			a.own[d.Key] = live.GetResourceVersion()
		}
	}
	a.mu.Unlock()
	if held != nil && a.requeue != nil {
		a.requeue(held)
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("apply %s: %w", d.Key, err)
	}
	return Outcome{Key: d.Key, Live: live}, nil
}

// unchanged reports whether applying desired again would change nothing:
// the live child carries the hash of this very content (so it was applied,
// by this process or an earlier one) and still holds every rendered value
// (nobody edited our fields since). The cache holds the preferred version
// of the resource; a child rendered at another version is compared by its
// hash alone. drifted is true when the hash is this content's but a value
// is not: the child drifted from a render that did not change.
func unchanged(live, desired *unstructured.Unstructured) (upToDate, drifted bool) {
	want := desired.GetAnnotations()[ownership.AnnotationHash]
	if want == "" || live.GetAnnotations()[ownership.AnnotationHash] != want {
		return false, false
	}
	if live.GetAPIVersion() != desired.GetAPIVersion() {
		return true, false
	}
	upToDate = Contains(live.Object, desired.Object)
	return upToDate, !upToDate
}

// OwnEvent reports whether a watch event of child (at key) must not
// reconcile its parent: it is the echo of this process's last write; or it
// arrived while an apply of the child waits for its response, and Apply
// will tell (requeueing the parent if it was someone else's change). An
// expectation is consumed by the event, so the maps hold at most one
// entry per child in flight.
func (a *Applier) OwnEvent(key Key, child metav1.Object) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inFlight[key] > 0 {
		a.held[key] = child
		return true
	}
	want, ok := a.own[key]
	if !ok {
		return false
	}
	delete(a.own, key)
	return want == child.GetResourceVersion()
}

// Forget drops what is remembered of a child, when it is deleted.
func (a *Applier) Forget(key Key) {
	a.mu.Lock()
	delete(a.own, key)
	delete(a.held, key)
	a.mu.Unlock()
}

// Peek returns the metadata of one of the operator's children as the
// cache last saw it, without decoding anything.
func (a *Applier) Peek(key Key) (metav1.Object, bool) {
	return a.cache.Peek(key.GR, key.Namespace, key.Name)
}

// Live returns one of the operator's children, decoded from the cache (or
// read, for one the cache keeps as metadata only: Cache.Get).
func (a *Applier) Live(ctx context.Context, key Key) (*unstructured.Unstructured, bool, error) {
	return a.cache.Get(ctx, key.GR, key.Namespace, key.Name)
}

// IsConflict reports whether err is a child the parent may not take over.
func IsConflict(err error) bool {
	var ce *ownership.ConflictError
	return errors.As(err, &ce)
}
