package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
)

// Sync makes the served kinds those of the folders under root: new folders
// start, changed ones restart with their new templates, removed ones stop.
// A folder that fails to load is reported and skipped; if it was being
// served, its last good version goes on serving, so that a half-saved edit
// never stops a running kind.
func (m *Manager) Sync(ctx context.Context, root string) error {
	log := klog.FromContext(ctx)
	kinds, skipped, err := catalog.Load(root)
	if err != nil {
		return err
	}
	m.mu.Lock()
	running := map[schema.GroupKind]string{}
	byDir := map[string]schema.GroupKind{}
	for gk, kc := range m.kinds {
		running[gk] = kc.kind.Fingerprint
		byDir[kc.kind.Dir] = gk
	}
	m.mu.Unlock()

	for _, s := range skipped {
		if m.reported[s.Dir] != s.Error() {
			log.Error(s.Err, "Kind folder skipped", "folder", s.Dir)
			m.reported[s.Dir] = s.Error()
		}
	}
	keep := map[schema.GroupKind]bool{}
	for _, s := range skipped {
		if gk, ok := byDir[s.Dir]; ok {
			keep[gk] = true
		}
	}
	for _, k := range kinds {
		delete(m.reported, k.Dir)
		gk := k.GVK.GroupKind()
		keep[gk] = true
		if fp, ok := running[gk]; ok && fp == k.Fingerprint {
			continue
		}
		if _, ok := running[gk]; ok {
			log.Info("Kind folder changed: restarting the kind", "folder", k.Dir, "kind", gk.String())
		}
		if err := m.Start(k); err != nil {
			log.Error(err, "Kind not started", "folder", k.Dir)
		}
	}
	for gk := range running {
		if !keep[gk] {
			log.Info("Kind folder removed: stopping the kind", "kind", gk.String())
			m.Stop(gk)
		}
	}
	return nil
}

// Watch calls Sync every interval until ctx is done.
func (m *Manager) Watch(ctx context.Context, root string, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := m.Sync(ctx, root); err != nil {
				klog.FromContext(ctx).Error(err, "Reloading the templates directory failed")
			}
		}
	}
}
