package chart

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"

	"helm.sh/helm/v3/pkg/ignore"

	"github.com/tmplop/operator/engine/catalog/layout"
)

// File is Helm's name of a chart's metadata: a folder that holds one at
// its root is a chart.
const File = "Chart.yaml"

// IsChart reports whether the folder whose top-level file names are given
// is a Helm chart.
func IsChart(fsys fs.FS) bool {
	_, err := fs.Stat(fsys, File)
	return err == nil
}

// Read reads every file of the chart held by fsys, sub-folders included,
// as Helm's loader.LoadDir does: .helmignore's rules and Helm's defaults
// apply, and symlinks are followed. Names are slash-separated paths from
// the chart's root.
func Read(fsys fs.FS) (layout.Files, error) {
	rules := ignore.Empty()
	if data, err := fs.ReadFile(fsys, ignore.HelmIgnore); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("%s: %w", ignore.HelmIgnore, err)
		}
	}
	rules.AddDefaults()
	files := layout.Files{}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		info, err := fs.Stat(fsys, name) // follows a symlink, as LoadDir does
		if err != nil {
			return err
		}
		if rules.Ignore(name, info) {
			if info.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if info.IsDir() {
			if d.Type()&fs.ModeSymlink != 0 {
				return readLinkedDir(fsys, name, files, rules)
			}
			return nil
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		files[name] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read chart: %w", err)
	}
	return files, nil
}

// readLinkedDir reads a sub-folder reached through a symlink (WalkDir does
// not enter them).
func readLinkedDir(fsys fs.FS, dir string, files layout.Files, rules *ignore.Rules) error {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return err
	}
	return fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == "." {
			return err
		}
		full := path.Join(dir, name)
		info, err := fs.Stat(sub, name)
		if err != nil {
			return err
		}
		if rules.Ignore(full, info) {
			if info.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if info.IsDir() {
			return nil
		}
		data, err := fs.ReadFile(sub, name)
		if err != nil {
			return fmt.Errorf("read %s: %w", full, err)
		}
		files[full] = data
		return nil
	})
}
