package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
)

// Folders is a source of kind folders: a directory, or the ConfigMaps of
// the operator's namespace.
type Folders interface {
	// Load returns the source's folders as they are now, compiled with l.
	// Folders that fail are returned as skipped; the error is for the
	// source as a whole.
	Load(l Loading) (kinds []*catalog.Kind, skipped []*catalog.FolderError, err error)
}

// Loading is what a sync gives the sources to compile their folders with.
type Loading struct {
	// Limits bound what compiling a folder may take (Options.FolderLimits).
	Limits catalog.Limits
	// Admit, when set, is asked before a folder is compiled, with its
	// kind.yaml alone: an error refuses the folder uncompiled (an
	// *AgreementError: its ServiceAccount does not agree to serve its
	// kind, or none can be chosen). A source that anyone who may write a
	// labelled ConfigMap feeds asks it, so that a folder refused costs
	// nothing to compile; a directory, the installer's, is compiled, then
	// checked (serve).
	Admit func(spec *catalog.Spec) error
	// Last is the Kind the last sync loaded from a source (a folder's
	// Dir), nil for none: a directory's folder whose files have its
	// fingerprint is that Kind, not compiled again. (A ConfigMap's folder
	// is compiled once per resourceVersion.)
	Last func(source string) *catalog.Kind
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

// Load implements Folders: only the folders that changed since the last
// sync (Loading.Last) are compiled.
func (d Dir) Load(l Loading) ([]*catalog.Kind, []*catalog.FolderError, error) {
	return l.Limits.LoadSince(string(d), l.Last)
}

// Sync makes the served kinds those of the folders under root.
func (m *Manager) Sync(ctx context.Context, root string) error { return m.SyncFolders(ctx, Dir(root)) }

// SyncFolders makes the served kinds those of the sources' folders: new
// folders start, changed ones restart with their new templates, removed
// ones stop. A folder that fails to load is reported and skipped; if it was
// being served, its last good version goes on serving, so that a half-saved
// edit never stops a running kind.
//
// A kind is served by one folder only, and once served it is never taken
// by another: a second folder for it is refused (KindConflictError) and the
// first keeps serving, whatever the names or the order of the sources. A
// newcomer that took over would restart the kind with its own templates,
// and its render would prune the children of the first folder's objects.
// Among new folders, the first source's wins, then the oldest ConfigMap.
//
// Each kind runs as its identity (agreements.identity), chosen again at
// every sync: a kind whose identity changed restarts as the new one. A
// kind whose account may not list and watch it is not served
// (AccessError).
func (m *Manager) SyncFolders(ctx context.Context, sources ...Folders) error {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	r := &syncRound{m: m, log: klog.FromContext(ctx), running: map[schema.GroupKind]*kindController{},
		keep: map[schema.GroupKind]bool{}, stopWhy: map[schema.GroupKind]string{}}
	byDir := map[string]schema.GroupKind{}
	m.mu.Lock()
	for gk, kc := range m.kinds {
		r.running[gk] = kc
		byDir[kc.kind.Dir] = gk
	}
	m.mu.Unlock()
	agreed := m.agreements()
	admit := func(spec *catalog.Spec) error {
		_, err := agreed.identityOf(ctx, spec, spec.GroupKind())
		return err
	}
	last := m.loadedKinds
	f, err := loadFolders(sources, byDir, Loading{Limits: m.opts.FolderLimits, Admit: admit,
		Last: func(source string) *catalog.Kind { return last[source] }})
	if err != nil {
		return err
	}
	m.loadedKinds = f.loaded
	r.folders = f
	r.skipped(byDir)
	for _, k := range f.kinds {
		r.serve(ctx, k, agreed)
	}
	r.stopGone()
	m.loaded.Store(true)
	return nil
}

// syncRound is one SyncFolders: what runs, what the sources hold, and
// which running kinds stay.
type syncRound struct {
	m       *Manager
	log     klog.Logger
	folders *folders
	running map[schema.GroupKind]*kindController
	// keep are the running kinds that a folder still serves; stopWhy, those
	// that stop although their folder is there (its ServiceAccount no
	// longer agrees, or may not watch the kind), with the log's message.
	keep    map[schema.GroupKind]bool
	stopWhy map[schema.GroupKind]string
}

// report tells the folder's source how it loaded (see loadReporter); a
// standby replica tells nothing, the leader does.
func (r *syncRound) report(dir string, gk schema.GroupKind, err error) {
	if rep, ok := r.folders.from[dir].(loadReporter); ok && r.m.Leading() {
		rep.Reported(dir, gk, err)
	}
}

// failed reports err once per folder and error.
func (r *syncRound) failed(dir string, gk schema.GroupKind, err error, msg string, kv ...any) {
	if r.m.reported[dir] == err.Error() {
		return
	}
	r.m.reported[dir] = err.Error()
	r.log.Error(err, msg, append([]any{"folder", dir}, kv...)...)
	r.report(dir, gk, err)
}

// skipped reports the folders that failed to load, and keeps the last good
// version of those that were served (byDir: served folder -> kind).
func (r *syncRound) skipped(byDir map[string]schema.GroupKind) {
	for _, s := range r.folders.skipped {
		var agreement *AgreementError
		if errors.As(s.Err, &agreement) {
			// Refused before it was compiled (Loading.Admit), as serve
			// refuses a compiled one.
			r.refused(s.Dir, agreement.gk, agreement.serviceAccount, s.Err)
			continue
		}
		gk, served := byDir[s.Dir]
		if served {
			r.keep[gk] = true
		}
		var conflict *KindConflictError
		if errors.As(s.Err, &conflict) {
			r.failed(s.Dir, schema.GroupKind{}, s.Err, "Kind folder refused: its kind is served by another folder", "kind", conflict.Kind.String(), "servedBy", conflict.ServedBy)
			continue
		}
		r.failed(s.Dir, gk, s.Err, "Kind folder skipped", "lastGoodVersionServed", served)
	}
}

// stopping marks running kind gk to stop at the end of the round, why.
func (r *syncRound) stopping(gk schema.GroupKind, why string) {
	r.keep[gk], r.stopWhy[gk] = false, why
}

// serve starts kind k, or restarts it when its folder or its identity
// changed, if its ServiceAccount agrees, may watch the kind, and its CRD
// installs.
func (r *syncRound) serve(ctx context.Context, k *catalog.Kind, agreed *agreements) {
	m := r.m
	gk := k.GVK.GroupKind()
	r.keep[gk] = true
	cur := r.running[gk]
	servedGK := func() schema.GroupKind {
		if cur == nil {
			return schema.GroupKind{}
		}
		return gk
	}
	id, err := agreed.identity(ctx, k)
	if err != nil {
		r.refused(k.Dir, gk, k.Spec.ServiceAccountName, err)
		return
	}
	same := cur != nil && cur.kind.Fingerprint == k.Fingerprint && cur.identity == id
	if same && cur.accessChecked {
		delete(m.reported, k.Dir)
		return
	}
	if !same && m.opts.Loaded != nil {
		m.opts.Loaded(k)
	}
	if !same && m.opts.InstallCRD != nil && m.Leading() {
		if err := m.opts.InstallCRD(ctx, k); err != nil {
			r.failed(k.Dir, servedGK(), err, "Kind folder skipped: its CRD was not installed", "kind", gk.String(), "lastGoodVersionServed", cur != nil)
			return
		}
	}
	var client *kube.Client
	if same {
		client = cur.client
	} else if client, err = m.clientAs(k, id); err != nil {
		r.failed(k.Dir, servedGK(), fmt.Errorf("client for kind %s: %w", gk, err), "Kind not started", "kind", gk.String())
		return
	}
	checked, err := m.checkAccess(ctx, k, id, client)
	var denied *AccessError
	switch {
	case errors.As(err, &denied):
		// Whatever runs of the kind runs as an account that may not watch
		// it either (or as one the installer no longer chooses).
		if cur != nil {
			r.stopping(gk, "Kind's ServiceAccount may not watch the kind: stopping the kind")
		}
		r.failed(k.Dir, schema.GroupKind{}, err, "Kind folder refused: its ServiceAccount may not watch the kind",
			"kind", gk.String(), "serviceAccount", id.account, "chosenBy", id.how)
		return
	case err != nil:
		r.log.Error(err, "Could not ask whether the kind's ServiceAccount may watch the kind; serving it: RBAC decides every call", "kind", gk.String())
	}
	delete(m.reported, k.Dir)
	if same {
		m.mu.Lock()
		cur.accessChecked = checked
		m.mu.Unlock()
		return
	}
	kv := []any{"folder", k.Dir, "kind", gk.String(), "identity", id.how}
	if id.impersonates() {
		kv = append(kv, "serviceAccount", id.account)
	}
	switch {
	case cur == nil:
		r.log.Info("Kind folder loaded: starting the kind", kv...)
	case cur.identity != id:
		r.log.Info("Kind's identity changed: restarting the kind", append(kv, "previousServiceAccount", cur.identity.account)...)
	default:
		r.log.Info("Kind folder changed: restarting the kind", kv...)
	}
	m.start(k, id, client, checked)
	r.report(k.Dir, gk, nil)
}

// refused handles the folder dir of kind gk, whose kind.yaml names the
// account sa ("": none), refused because no account agrees to serve the
// kind (err): a withdrawn agreement ends the running version too, when it
// runs as the account the folder names; a new account that does not
// agree, or one that cannot be chosen now, leaves the last good version
// serving. A kind another folder serves is not this folder's to keep or
// end.
func (r *syncRound) refused(dir string, gk schema.GroupKind, sa string, err error) {
	cur := r.running[gk]
	if cur != nil && cur.kind.Dir != dir {
		cur = nil
	}
	if cur != nil {
		r.keep[gk] = true
		if sa != "" && cur.identity.account == sa {
			r.stopping(gk, "Kind's ServiceAccount no longer agrees: stopping the kind")
			cur = nil
		}
	}
	served := gk
	if cur == nil {
		served = schema.GroupKind{}
	}
	r.failed(dir, served, err, "Kind folder refused: its ServiceAccount does not agree", "kind", gk.String(), "lastGoodVersionServed", cur != nil)
}

// stopGone stops the running kinds that no folder serves any more, and
// those stopping for another reason (stopWhy).
func (r *syncRound) stopGone() {
	for gk := range r.running {
		switch why := r.stopWhy[gk]; {
		case why != "":
			r.log.Info(why, "kind", gk.String())
		case !r.keep[gk]:
			r.log.Info("Kind folder removed: stopping the kind", "kind", gk.String())
		default:
			continue
		}
		r.m.Stop(gk)
	}
}

// KindConflictError is a folder for a kind that another folder serves.
type KindConflictError struct {
	Kind     schema.GroupKind
	ServedBy string // the folder that serves it
}

func (e *KindConflictError) Error() string {
	return fmt.Sprintf("kind %s is already served by %s: this folder is not loaded, and %s keeps serving it", e.Kind, e.ServedBy, e.ServedBy)
}

// folders is what the sources hold, one folder per kind.
type folders struct {
	kinds   []*catalog.Kind
	skipped []*catalog.FolderError
	from    map[string]Folders // folder -> its source
	// loaded are the kinds the sources loaded, by folder, one folder per
	// kind or not: the next sync's Loading.Last.
	loaded map[string]*catalog.Kind
}

// loadFolders loads every source with l and keeps one folder per kind:
// the one that serves it now (byDir: served folder -> kind), else the
// first.
func loadFolders(sources []Folders, byDir map[string]schema.GroupKind, l Loading) (*folders, error) {
	f := &folders{from: map[string]Folders{}, loaded: map[string]*catalog.Kind{}}
	var all []*catalog.Kind
	for _, src := range sources {
		ks, sk, err := src.Load(l)
		if err != nil {
			return nil, err
		}
		for _, s := range sk {
			f.from[s.Dir] = src
		}
		f.skipped = append(f.skipped, sk...)
		for _, k := range ks {
			f.from[k.Dir] = src
			f.loaded[k.Dir] = k
		}
		all = append(all, ks...)
	}
	owner := map[schema.GroupKind]string{}
	present := map[string]bool{}
	for _, k := range all {
		present[k.Dir] = true
	}
	for _, s := range f.skipped {
		present[s.Dir] = true // broken, but its last good version serves
	}
	for dir, gk := range byDir {
		if present[dir] {
			owner[gk] = dir
		}
	}
	for _, k := range all {
		gk := k.GVK.GroupKind()
		if _, ok := owner[gk]; !ok {
			owner[gk] = k.Dir
		}
		if owner[gk] != k.Dir {
			f.skipped = append(f.skipped, &catalog.FolderError{Dir: k.Dir, Err: &KindConflictError{Kind: gk, ServedBy: owner[gk]}})
			continue
		}
		f.kinds = append(f.kinds, k)
	}
	return f, nil
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
