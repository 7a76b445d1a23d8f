package render

import (
	"io/fs"
	"slices"
	"text/template"

	"github.com/tmplop/operator/engine/catalog/layout"
)

// Set is one folder's templates, parsed once.
//
// A Set is immutable after parsing and safe for concurrent use: every render
// executes a clone of it (see checkout in instance.go).
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

// statusFile is the file that renders .status (layout.StatusFile).
const statusFile = layout.StatusFile

// rootName names the empty template that holds the set; it is never executed
// and cannot collide with a file name, as files need an extension or a '_'.
const rootName = "render"

// ParseFS parses every template of a folder (fsys is e.g. os.DirFS(dir)). Errors name file:line
// (return *Error or an error wrapping it; a folder with several broken files may report the first).
//
// Only the top level of fsys is read; sub-folders and files that are not
// templates (kind.yaml, README.md...) are skipped without being read.
func ParseFS(fsys fs.FS) (*Set, error) {
	files, err := layout.Read(fsys)
	if err != nil {
		return nil, &Error{Message: err.Error(), err: err}
	}
	return Parse(files.Templates())
}

// Parse is ParseFS over in-memory files: file name -> content.
//
// Names are classified as in a folder (layout.RoleOf); names of files that
// are not templates, or containing '/' (files of sub-folders), are ignored.
func Parse(files map[string]string) (*Set, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		if layout.RoleOf(name).Template() {
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
		switch layout.RoleOf(name) {
		case layout.Child:
			s.children = append(s.children, name)
		case layout.Status:
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
