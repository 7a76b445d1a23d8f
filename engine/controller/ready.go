package controller

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/reconcile"
)

// Ready reports whether every served kind has listed its objects: nil when
// each kind's informer has synced (a Manager serving no kind is ready),
// else an error naming the kinds still waiting for their CRD (not served
// by the API server) and those still listing. It is what the readiness probe serves.
func (m *Manager) Ready() error {
	if !m.loaded.Load() {
		return fmt.Errorf("kind folders not loaded yet")
	}
	if sh := m.opts.Sharding; sh != nil {
		// Until the ring shows this shard, the sharder assigns it nothing:
		// a rolling update must wait for it before stopping another.
		if ring, _ := sh.Members.Ring(); !ring.Has(sh.ID) {
			return fmt.Errorf("shard %s is not on the ring yet: its Lease is not seen live (live shards: %v)", sh.ID, ring.Shards())
		}
	}
	m.mu.Lock()
	kinds := make(map[schema.GroupKind]*kindController, len(m.kinds))
	for gk, kc := range m.kinds {
		kinds[gk] = kc
	}
	m.mu.Unlock()

	var noCRD, listing []string
	for gk, kc := range kinds {
		served, synced := kc.synced()
		switch {
		case !served:
			// run acquires the watch once the API server serves the kind.
			noCRD = append(noCRD, gk.String())
		case !synced:
			listing = append(listing, gk.String())
		}
	}
	if len(noCRD) == 0 && len(listing) == 0 {
		return nil
	}
	var parts []string
	if len(noCRD) > 0 {
		slices.Sort(noCRD)
		parts = append(parts, "not served by the API server yet (is their CRD installed?): "+strings.Join(noCRD, ", "))
	}
	if len(listing) > 0 {
		slices.Sort(listing)
		parts = append(parts, "still listing their objects: "+strings.Join(listing, ", "))
	}
	return fmt.Errorf("kinds not synced: %s", strings.Join(parts, "; "))
}

// writesOf is the kind's ownWrites, made at its first start and the same
// across its restarts: a restarted kind reads its objects at least as new
// as the last writes before the restart.
func (m *Manager) writesOf(gk schema.GroupKind) *ownWrites {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.writes == nil {
		m.writes = map[schema.GroupKind]*ownWrites{}
	}
	w := m.writes[gk]
	if w == nil {
		w = newOwnWrites()
		m.writes[gk] = w
	}
	return w
}

// statsOf returns the counters of kind gk, the same across restarts of the
// kind (a changed folder), so that they only grow, as metrics expect.
func (m *Manager) statsOf(gk schema.GroupKind) *reconcile.Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stats == nil {
		m.stats = map[schema.GroupKind]*reconcile.Stats{}
	}
	s := m.stats[gk]
	if s == nil {
		s = &reconcile.Stats{}
		m.stats[gk] = s
	}
	return s
}
