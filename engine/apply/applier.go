package apply

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tmplop/operator/engine/kube"
)

// Cache holds the live children the operator watches (informer caches
// filtered by the manager label).
type Cache interface {
	// Get returns a watched child, or false when it is not in the cache.
	Get(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, bool)
	// List returns the watched children of gvr matching selector, in every
	// watched namespace.
	List(gvr schema.GroupVersionResource, selector labels.Selector) []*unstructured.Unstructured
	// Watched returns the resources whose children are being watched.
	Watched() []schema.GroupVersionResource
	// Ensure starts watching the children of m's resource.
	Ensure(m *meta.RESTMapping)
}

// Key identifies a child.
type Key struct {
	GVR       schema.GroupVersionResource
	Namespace string
	Name      string
}

func (k Key) String() string {
	return fmt.Sprintf("%s %s/%s", k.GVR.GroupResource(), k.Namespace, k.Name)
}

// applied is what the last successful apply of a child wrote.
type applied struct {
	hash [sha256.Size]byte
	uid  types.UID
}

// Applier applies children and prunes them. It is shared by all workers of
// all kinds; the client is passed per call because each kind has its own.
type Applier struct {
	cache Cache

	mu   sync.Mutex
	last map[Key]applied
}

// NewApplier returns an Applier that skips writes against cache (may be nil:
// then every child is applied every time).
func NewApplier(cache Cache) *Applier {
	return &Applier{cache: cache, last: map[Key]applied{}}
}

// Outcome is one applied child.
type Outcome struct {
	Key  Key
	Live *unstructured.Unstructured
	// Skipped is true when the child was already as rendered and no write
	// was made.
	Skipped bool
}

// Apply server-side applies child (already adopted) as mapped by m.
func (a *Applier) Apply(ctx context.Context, c *kube.Client, m *meta.RESTMapping, child *unstructured.Unstructured) (Outcome, error) {
	key := Key{GVR: m.Resource, Namespace: child.GetNamespace(), Name: child.GetName()}
	if a.cache != nil {
		// Watching from the first apply on is what repairs drift and
		// what lets a later render see the child's status.
		a.cache.Ensure(m)
	}
	data, err := json.Marshal(child.Object)
	if err != nil {
		return Outcome{}, fmt.Errorf("encode %s: %w", key, err)
	}
	sum := sha256.Sum256(data)
	if live, ok := a.unchanged(key, sum, child); ok {
		return Outcome{Key: key, Live: live, Skipped: true}, nil
	}
	live, err := c.ApplyMapped(ctx, m, child)
	if err != nil {
		return Outcome{}, fmt.Errorf("apply %s: %w", key, err)
	}
	a.mu.Lock()
	a.last[key] = applied{hash: sum, uid: live.GetUID()}
	a.mu.Unlock()
	return Outcome{Key: key, Live: live}, nil
}

// unchanged returns the cached child when applying desired again would
// change nothing: this process applied the same content to this very object
// (same UID) last time, and the object still holds every rendered value, so
// nobody edited our fields since.
func (a *Applier) unchanged(key Key, sum [sha256.Size]byte, desired *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	if a.cache == nil {
		return nil, false
	}
	a.mu.Lock()
	last, ok := a.last[key]
	a.mu.Unlock()
	if !ok || last.hash != sum {
		return nil, false
	}
	live, ok := a.cache.Get(key.GVR, key.Namespace, key.Name)
	if !ok || live.GetUID() != last.uid || live.GetDeletionTimestamp() != nil {
		return nil, false
	}
	if !Contains(live.Object, desired.Object) {
		return nil, false
	}
	return live, true
}

// Forget drops what is remembered of a child, when it is deleted.
func (a *Applier) Forget(key Key) {
	a.mu.Lock()
	delete(a.last, key)
	a.mu.Unlock()
}
