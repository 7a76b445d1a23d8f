package chart

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"

	"helm.sh/helm/v3/pkg/ignore"

	"github.com/tmplop/operator/engine/layout"
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
	if err := readTree(fsys, "", files, rules); err != nil {
		return nil, fmt.Errorf("read chart: %w", err)
	}
	return files, nil
}

// readTree reads the files of fsys into files, named under prefix (the
// path of fsys in the chart). WalkDir does not enter a symlink to a
// folder: readTree does, through the folder's own fs.Sub.
func readTree(fsys fs.FS, prefix string, files layout.Files, rules *ignore.Rules) error {
	return fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == "." {
			return err
		}
		full := path.Join(prefix, name)
		info, err := fs.Stat(fsys, name) // follows a symlink, as LoadDir does
		if err != nil {
			return err
		}
		switch {
		case rules.Ignore(full, info) && info.IsDir():
			return fs.SkipDir
		case rules.Ignore(full, info):
			return nil
		case info.IsDir() && d.Type()&fs.ModeSymlink != 0:
			sub, err := fs.Sub(fsys, name)
			if err != nil {
				return err
			}
			return readTree(sub, full, files, rules)
		case info.IsDir():
			return nil
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return fmt.Errorf("read %s: %w", full, err)
		}
		files[full] = data
		return nil
	})
}
