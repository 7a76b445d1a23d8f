package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FolderError is a kind folder that could not be loaded.
type FolderError struct {
	Dir string
	Err error
}

func (e *FolderError) Error() string { return fmt.Sprintf("kind folder %s: %v", e.Dir, e.Err) }
func (e *FolderError) Unwrap() error { return e.Err }

// Load loads every kind folder under root, in name order. Folders that fail
// are skipped and reported one error each, so that a broken folder never
// stops the valid kinds. The error is non-nil only when root itself cannot be
// read.
func Load(root string) (kinds []*Kind, skipped []*FolderError, err error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, fmt.Errorf("read templates directory: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	seen := map[string]string{}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		// A folder may be a symlink (a mounted ConfigMap volume's keys are
		// symlinks through ..data); dot-entries are the volume's own.
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, KindFile)); err != nil {
			continue
		}
		k, err := LoadKind(dir)
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
	return kinds, skipped, nil
}
