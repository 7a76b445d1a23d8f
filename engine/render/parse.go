package render

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"text/template"
)

// Set is one folder's templates, parsed once.
//
// A Set is immutable after parsing and safe for concurrent use: every render
// executes a clone of it (see newRender).
type Set struct {
	tmpl     *template.Template
	children []string // sorted, so output order never depends on map or directory order
	status   bool
	// files holds every parsed file name, to tell locations in real files
	// from locations inside tpl strings when rewriting errors.
	files map[string]struct{}
	// scalar names the functions whose results print as scalars (guard.go).
	scalar map[string]bool

	// free keeps instances (clones with bound functions) between renders:
	// building one costs more than the render itself.
	free chan *instance
	// runaway counts renders abandoned past their deadline that still run.
	runaway runaways
}

// Reserved file names of the folder contract.
const (
	kindFile   = "kind.yaml"   // read by the catalog, not a template
	crdFile    = "crd.yaml"    // the folder's own CRD, not a template
	statusFile = "status.yaml" // renders .status after the children are applied
)

// rootName names the empty template that holds the set; it is never executed
// and cannot collide with a file name, as files need an extension or a '_'.
const rootName = "render"

type fileRole int

const (
	roleIgnored fileRole = iota
	roleHelper
	roleChild
	roleStatus
)

// roleOf classifies a top-level file name of a template folder.
func roleOf(name string) fileRole {
	switch {
	case name == "" || strings.ContainsAny(name, `/\`):
		// Only the top level is read; Parse sees such names only from callers.
		return roleIgnored
	case strings.HasPrefix(name, "."):
		// Editor swap files and the like are never templates.
		return roleIgnored
	case strings.HasPrefix(name, "_"):
		return roleHelper
	case name == kindFile, name == crdFile:
		return roleIgnored
	case name == statusFile:
		return roleStatus
	}
	switch path.Ext(name) {
	case ".yaml", ".yml":
		return roleChild
	}
	return roleIgnored
}

// ParseFS parses every template of a folder (fsys is e.g. os.DirFS(dir)). Errors name file:line
// (return *Error or an error wrapping it; a folder with several broken files may report the first).
//
// Only the top level of fsys is read; sub-folders and files that are not
// templates (kind.yaml, README.md...) are skipped without being read.
func ParseFS(fsys fs.FS) (*Set, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, &Error{Message: fmt.Sprintf("read template folder: %v", err), err: err}
	}
	files := make(map[string]string, len(entries))
	for _, entry := range entries {
		name := entry.Name()
		if entry.IsDir() || roleOf(name) == roleIgnored {
			continue
		}
		if entry.Type()&fs.ModeSymlink != 0 {
			// A symlink reports its own type; skip it when it points to a folder.
			if info, err := fs.Stat(fsys, name); err == nil && info.IsDir() {
				continue
			}
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, &Error{Template: name, Message: fmt.Sprintf("read template: %v", err), err: err}
		}
		files[name] = string(data)
	}
	return Parse(files)
}

// Parse is ParseFS over in-memory files: file name -> content.
//
// Names are classified as in a folder; names containing '/' (files of
// sub-folders) are ignored.
func Parse(files map[string]string) (*Set, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		if roleOf(name) != roleIgnored {
			names = append(names, name)
		}
	}
	// Sorted, so that when two files define the same helper the winner does
	// not change from one run to the next, and the first error is stable.
	slices.Sort(names)

	funcs, scalar := parseFuncs()
	s := &Set{
		tmpl:   template.New(rootName).Option("missingkey=zero").Funcs(funcs),
		files:  make(map[string]struct{}, len(names)),
		scalar: scalar,
		free:   make(chan *instance, freeInstances),
	}
	for _, name := range names {
		if _, err := s.tmpl.New(name).Parse(files[name]); err != nil {
			return nil, parseError(name, err)
		}
		s.files[name] = struct{}{}
		switch roleOf(name) {
		case roleChild:
			s.children = append(s.children, name)
		case roleStatus:
			s.status = true
		}
	}
	// Guarded once here; every render and every clone shares the trees.
	for _, t := range s.tmpl.Templates() {
		guardTree(t.Tree, scalar)
	}
	return s, nil
}

// ChildTemplates returns the sorted file names of the child templates.
func (s *Set) ChildTemplates() []string { return slices.Clone(s.children) }

// HasStatus reports whether the folder has a status.yaml.
func (s *Set) HasStatus() bool { return s.status }
