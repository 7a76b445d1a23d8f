package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
)

// Folders is a source of kind folders: a directory, or the ConfigMaps of
// the operator's namespace.
type Folders interface {
	// Load returns the source's folders as they are now. Folders that fail
	// are returned as skipped; the error is for the source as a whole.
	Load() (kinds []*catalog.Kind, skipped []*catalog.FolderError, err error)
}

// changeNotifier is a source that says when it changed, so that a change
// is served at once instead of at the next poll.
type changeNotifier interface {
	Changed() <-chan struct{}
}

// loadReporter is a source that tells its users how their folder loaded
// (an Event on the ConfigMap). err is nil when the kind started.
type loadReporter interface {
	Reported(source string, gk schema.GroupKind, err error)
}

// Dir is a templates directory: one kind folder per sub-directory.
type Dir string

// Load implements Folders.
func (d Dir) Load() ([]*catalog.Kind, []*catalog.FolderError, error) { return catalog.Load(string(d)) }

// Sync makes the served kinds those of the folders under root.
func (m *Manager) Sync(ctx context.Context, root string) error { return m.SyncFolders(ctx, Dir(root)) }

// SyncFolders makes the served kinds those of the sources' folders: new
// folders start, changed ones restart with their new templates, removed
// ones stop. A folder that fails to load is reported and skipped; if it was
// being served, its last good version goes on serving, so that a half-saved
// edit never stops a running kind. A kind served by two folders is served
// by the first source's.
func (m *Manager) SyncFolders(ctx context.Context, sources ...Folders) error {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	log := klog.FromContext(ctx)
	var kinds []*catalog.Kind
	var skipped []*catalog.FolderError
	from := map[string]Folders{}
	seen := map[schema.GroupKind]string{}
	for _, src := range sources {
		ks, sk, err := src.Load()
		if err != nil {
			return err
		}
		for _, s := range sk {
			from[s.Dir] = src
		}
		skipped = append(skipped, sk...)
		for _, k := range ks {
			from[k.Dir] = src
			gk := k.GVK.GroupKind()
			if other, dup := seen[gk]; dup {
				skipped = append(skipped, &catalog.FolderError{Dir: k.Dir, Err: fmt.Errorf("kind %s is already served by %s", gk, other)})
				continue
			}
			seen[gk] = k.Dir
			kinds = append(kinds, k)
		}
	}
	m.mu.Lock()
	running := map[schema.GroupKind]string{}
	byDir := map[string]schema.GroupKind{}
	for gk, kc := range m.kinds {
		running[gk] = kc.kind.Fingerprint
		byDir[kc.kind.Dir] = gk
	}
	m.mu.Unlock()

	report := func(dir string, gk schema.GroupKind, err error) {
		if r, ok := from[dir].(loadReporter); ok && m.Leading() {
			r.Reported(dir, gk, err)
		}
	}
	keep := map[schema.GroupKind]bool{}
	for _, s := range skipped {
		gk, served := byDir[s.Dir]
		if served {
			keep[gk] = true
		}
		if m.reported[s.Dir] != s.Error() {
			log.Error(s.Err, "Kind folder skipped", "folder", s.Dir, "lastGoodVersionServed", served)
			m.reported[s.Dir] = s.Error()
			report(s.Dir, gk, s.Err)
		}
	}
	for _, k := range kinds {
		gk := k.GVK.GroupKind()
		keep[gk] = true
		if fp, ok := running[gk]; ok && fp == k.Fingerprint {
			delete(m.reported, k.Dir)
			continue
		}
		if m.opts.InstallCRD != nil && m.Leading() {
			if err := m.opts.InstallCRD(ctx, k); err != nil {
				_, served := running[gk]
				if m.reported[k.Dir] != err.Error() {
					log.Error(err, "Kind folder skipped: its CRD was not installed", "folder", k.Dir, "kind", gk.String(), "lastGoodVersionServed", served)
					m.reported[k.Dir] = err.Error()
					if !served {
						gk = schema.GroupKind{}
					}
					report(k.Dir, gk, err)
				}
				continue
			}
		}
		delete(m.reported, k.Dir)
		if _, ok := running[gk]; ok {
			log.Info("Kind folder changed: restarting the kind", "folder", k.Dir, "kind", gk.String())
		} else {
			log.Info("Kind folder loaded: starting the kind", "folder", k.Dir, "kind", gk.String())
		}
		err := m.Start(k)
		if err != nil {
			log.Error(err, "Kind not started", "folder", k.Dir)
		}
		report(k.Dir, gk, err)
	}
	for gk := range running {
		if !keep[gk] {
			log.Info("Kind folder removed: stopping the kind", "kind", gk.String())
			m.Stop(gk)
		}
	}
	m.loaded.Store(true)
	return nil
}

// changeDelay gathers the events of one change (a kubectl apply of several
// ConfigMaps, a file saved in steps) into one sync.
const changeDelay = 200 * time.Millisecond

// Watch syncs the sources every interval (0: never), and at once when a
// source says it changed, until ctx is done.
func (m *Manager) Watch(ctx context.Context, interval time.Duration, sources ...Folders) {
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	changed := make(chan struct{}, 1)
	for _, src := range sources {
		if n, ok := src.(changeNotifier); ok {
			go func() {
				for {
					select {
					case <-ctx.Done():
						return
					case <-n.Changed():
						select {
						case changed <- struct{}{}:
						default:
						}
					}
				}
			}()
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-changed:
			select {
			case <-ctx.Done():
				return
			case <-time.After(changeDelay):
			}
		}
		if err := m.SyncFolders(ctx, sources...); err != nil {
			klog.FromContext(ctx).Error(err, "Reloading the kind folders failed")
		}
	}
}
