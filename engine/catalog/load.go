package catalog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

// FolderError is a kind folder that could not be loaded.
type FolderError struct {
	Dir string
	Err error
}

func (e *FolderError) Error() string { return fmt.Sprintf("kind folder %s: %v", e.Dir, e.Err) }
func (e *FolderError) Unwrap() error { return e.Err }

// IsFolder reports whether dir is a kind folder: it holds a kind.yaml.
func IsFolder(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, KindFile))
	return err == nil
}

// FolderDirs lists the kind folders under root, in name order: its
// sub-folders that hold a kind.yaml. A folder may be a symlink (a mounted
// ConfigMap volume's keys are symlinks through ..data); dot-entries are the
// volume's own, never folders.
func FolderDirs(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("read templates directory: %w", err)
	}
	var dirs []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || !IsFolder(dir) {
			continue
		}
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	return dirs, nil
}

// FoldersOf is dir itself when it is a kind folder, else FolderDirs(dir):
// what the commands that describe folders (lint, rbac, crd) accept.
func FoldersOf(dir string) ([]string, error) {
	if IsFolder(dir) {
		return []string{dir}, nil
	}
	return FolderDirs(dir)
}

// Load loads every kind folder under root, in name order. Folders that fail
// are skipped and reported one error each, so that a broken folder never
// stops the valid kinds. The error is non-nil only when root itself cannot be
// read.
func Load(root string) (kinds []*Kind, skipped []*FolderError, err error) {
	return Limits{}.Load(root)
}

// Load is Load within l.
func (l Limits) Load(root string) (kinds []*Kind, skipped []*FolderError, err error) {
	return l.LoadSince(root, nil)
}

// LoadSince is Load, but a folder whose files are those of the Kind last
// returns for its source (its Dir), by their fingerprint, is that Kind,
// not compiled again: a reload compiles only the folders that changed.
// last may be nil; a nil Kind is none.
func (l Limits) LoadSince(root string, last func(source string) *Kind) (kinds []*Kind, skipped []*FolderError, err error) {
	dirs, err := FolderDirs(root)
	if err != nil {
		return nil, nil, err
	}
	kinds, skipped = l.loadDirs(l.sources(root, dirs), last)
	return kinds, skipped, nil
}

// Sources names the folders Load would load under root, without reading
// them: its kind folders, then the entries of its watches.yaml (or the
// watches.yaml, when it cannot be read). The error is for a root that
// cannot be read.
func Sources(root string) ([]string, error) {
	dirs, err := FolderDirs(root)
	if err != nil {
		return nil, err
	}
	srcs := Limits{}.sources(root, dirs)
	out := make([]string, 0, len(srcs))
	for _, s := range srcs {
		out = append(out, s.dir)
	}
	return out, nil
}

// source is one kind folder to load: a folder of root, or an entry of
// root's watches.yaml. read returns the folder's name and files.
type source struct {
	dir  string
	read func() (string, layout.Files, error)
}

// sources are the folders dirs, then the entries of root's watches.yaml.
// A watches.yaml that cannot be read is one source that fails.
func (l Limits) sources(root string, dirs []string) []source {
	out := make([]source, 0, len(dirs))
	for _, dir := range dirs {
		out = append(out, source{dir: dir, read: func() (string, layout.Files, error) {
			files, err := ReadFolder(os.DirFS(dir))
			return filepath.Base(dir), files, err
		}})
	}
	watches, err := readWatches(root)
	if err != nil {
		return append(out, source{dir: filepath.Join(root, WatchesFile), read: func() (string, layout.Files, error) { return "", nil, err }})
	}
	uses := map[string]int{}
	for _, w := range watches {
		uses[w.dir]++
	}
	for _, w := range watches {
		out = append(out, source{dir: watchSource(w, uses[w.dir] > 1), read: func() (string, layout.Files, error) {
			files, err := readWatch(w)
			return filepath.Base(w.dir), files, err
		}})
	}
	return out
}

// load reads src and compiles it, or returns last's Kind of it when its
// files are the same.
func (l Limits) load(src source, last func(source string) *Kind) (*Kind, error) {
	name, files, err := src.read()
	if err != nil {
		return nil, err
	}
	if last != nil {
		if k := last(src.dir); k != nil && k.Fingerprint == files.Fingerprint() {
			return k, nil
		}
	}
	return l.Compile(name, src.dir, files)
}

// loadDirs loads the folders of srcs (see load), one folder per kind: a
// second folder for a kind is skipped, naming the first.
func (l Limits) loadDirs(srcs []source, last func(source string) *Kind) (kinds []*Kind, skipped []*FolderError) {
	seen := map[string]string{}
	for _, src := range srcs {
		dir := src.dir
		k, err := l.load(src, last)
		if err != nil {
			skipped = append(skipped, &FolderError{Dir: dir, Err: err})
			continue
		}
		gk := k.GVK.GroupKind().String()
		if other, dup := seen[gk]; dup {
			skipped = append(skipped, &FolderError{Dir: dir, Err: fmt.Errorf("kind %s is already served by %s", gk, other)})
			continue
		}
		seen[gk] = dir
		kinds = append(kinds, k)
	}
	return kinds, skipped
}

// LoadEvery loads the kind folders of dir, or dir itself when it holds a
// kind.yaml, for the commands that describe folders rather than serve
// them (operator rbac, operator crd). Unlike Load, which skips broken
// folders so that the others still run, every folder that fails is an
// error here: RBAC or CRDs for "the folders but one" would be wrong for
// the one. Errors name the file and line, as path/file:line: message.
func LoadEvery(dir string) ([]*Kind, error) {
	dirs, err := FoldersOf(dir)
	if err != nil {
		return nil, err
	}
	srcs := Limits{}.sources(dir, dirs)
	if len(srcs) == 0 {
		return nil, fmt.Errorf("%s: no kind folder (a folder with a %s)", dir, KindFile)
	}
	kinds, skipped := Limits{}.loadDirs(srcs, nil)
	var errs []error
	for _, s := range skipped {
		errs = append(errs, locate(s.Dir, s.Err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return kinds, nil
}

// locate puts the folder's path before the file:line of err, a mistake
// in a file of the folder (*render.Error), or before err.
func locate(dir string, err error) error {
	if re, ok := errors.AsType[*render.Error](err); ok && re.Template != "" {
		return &located{path: filepath.Join(dir, re.Template), err: re}
	}
	return fmt.Errorf("%s: %w", dir, err)
}

// located is a mistake in a file with the path of its file: path:line:
// message.
type located struct {
	path string
	err  *render.Error
}

func (l *located) Error() string {
	if l.err.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", l.path, l.err.Line, l.err.Message)
	}
	return l.path + ": " + l.err.Message
}

func (l *located) Unwrap() error { return l.err }
