package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// Reload intervals of a templates directory.
const (
	// DefaultReloadInterval is the poll behind the file events: a safety
	// net for an event the kernel dropped, not the way a change arrives.
	DefaultReloadInterval = time.Minute
	// PollReloadInterval is the poll of a directory whose file events
	// cannot be watched (inotify limits): then the only way a change arrives.
	PollReloadInterval = 5 * time.Second
)

// DirWatcher is a templates directory that says when it changed, from file
// events: the directory and each of its folders are watched (a folder that
// appears is watched as it appears), and any entry created, written,
// removed, renamed or chmod-ed in them is a change. That covers an editor's
// save (in place, or a new file renamed over the old one), a folder copied
// in or removed, and the atomic update of a mounted ConfigMap volume, where
// the kubelet writes the new files into a new hidden directory and renames a
// `..data` symlink over the old one: an event in the folder (or in the
// directory, when the whole directory is the volume) whatever the files are.
//
// Events are not debounced here: Manager.Watch waits changeDelay after a
// notification, so that a save in several steps is one reload.
type DirWatcher struct {
	Dir
	root    string
	w       *fsnotify.Watcher
	changed chan struct{}
	log     klog.Logger
	// real is the resolved path of each watched folder when it was
	// watched: a folder that is a symlink (a volume's `..data/name`) is
	// watched again when its target changes.
	real map[string]string
	// polling is set once a folder could not be watched: the directory
	// then also says it changed every PollReloadInterval.
	polling bool
}

// WatchDir watches the templates directory root until ctx is done. It fails
// when file events cannot be watched at all (no inotify instance or watch
// left): the caller then polls the directory instead. A folder that cannot
// be watched later is logged, and the directory is then polled as well.
func WatchDir(ctx context.Context, root string) (*DirWatcher, error) {
	root = filepath.Clean(root)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s for file events: %w", root, explainWatchErr(err))
	}
	d := &DirWatcher{Dir: Dir(root), root: root, w: w, changed: make(chan struct{}, 1),
		log: klog.FromContext(ctx).WithValues("templates", root), real: map[string]string{}}
	if err := w.Add(root); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watch %s for file events: %w", root, explainWatchErr(err))
	}
	if err := d.rescan(); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watch %s for file events: %w", root, err)
	}
	go d.run(ctx)
	return d, nil
}

// Changed implements changeNotifier.
func (d *DirWatcher) Changed() <-chan struct{} { return d.changed }

func (d *DirWatcher) notify() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

func (d *DirWatcher) run(ctx context.Context) {
	defer d.w.Close()
	var poll <-chan time.Time
	for {
		if d.polling && poll == nil {
			t := time.NewTicker(PollReloadInterval)
			defer t.Stop()
			poll = t.C
		}
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-d.w.Events:
			if !ok {
				return
			}
			if d.log.V(4).Enabled() {
				d.log.V(4).Info("Templates directory event", "event", ev.String())
			}
			// A write changes no entry: no folder to watch or forget.
			if ev.Op != fsnotify.Write {
				d.rescanLogged()
			}
			d.notify()
		case err, ok := <-d.w.Errors:
			if !ok {
				return
			}
			// An overflow lost events: look again at everything.
			d.log.Error(err, "Templates directory file events; reloading the folders")
			d.rescanLogged()
			d.notify()
		case <-poll:
			d.notify()
		}
	}
}

func (d *DirWatcher) rescanLogged() {
	if err := d.rescan(); err != nil {
		if !d.polling {
			d.log.Error(err, "Kind folder not watched for file events; polling the templates directory as well", "interval", PollReloadInterval.String())
		}
		d.polling = true
	}
}

// rescan makes the watched folders the directory's folders as they are now.
func (d *DirWatcher) rescan() error {
	entries, err := os.ReadDir(d.root)
	if err != nil {
		// Gone for now; Load reports it, and its re-creation is polled.
		return fmt.Errorf("read templates directory: %w", err)
	}
	want := map[string]string{}
	for _, e := range entries {
		// `..data` and `..2026_...` are a volume's own: the rename of
		// `..data` is seen in the directory holding it.
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		path := filepath.Join(d.root, e.Name())
		if !e.IsDir() {
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
				continue
			}
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			continue // removed meanwhile: its event follows
		}
		want[path] = real
	}
	watched := map[string]bool{}
	for _, p := range d.w.WatchList() {
		watched[p] = true
	}
	var errs []error
	if !watched[d.root] {
		// The directory was removed and made again.
		if err := d.w.Add(d.root); err != nil {
			errs = append(errs, fmt.Errorf("watch %s: %w", d.root, explainWatchErr(err)))
		}
	}
	for path, real := range want {
		if watched[path] && d.real[path] == real {
			continue
		}
		// Adding a watched path again moves its watch to the path's
		// current target.
		if err := d.w.Add(path); err != nil {
			delete(d.real, path)
			errs = append(errs, fmt.Errorf("watch %s: %w", path, explainWatchErr(err)))
			continue
		}
		d.real[path] = real
	}
	for path := range d.real {
		if _, ok := want[path]; !ok {
			_ = d.w.Remove(path) // often gone with the folder already
			delete(d.real, path)
		}
	}
	return errors.Join(errs...)
}

// explainWatchErr names the limit behind inotify's terse errors.
func explainWatchErr(err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("%w (the inotify watch limit fs.inotify.max_user_watches is reached)", err)
	case errors.Is(err, syscall.EMFILE):
		return fmt.Errorf("%w (the inotify instance limit fs.inotify.max_user_instances is reached)", err)
	}
	return err
}

var _ changeNotifier = (*DirWatcher)(nil)
