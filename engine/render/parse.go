package render

import (
	"slices"
	"text/template"

	"github.com/tmplop/operator/engine/layout"
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

// Parse parses every template of a folder's files (file name -> content,
// as layout.Files.Templates gives them). Errors name file:line (*Error,
// or an error wrapping it; a folder with several broken files may report
// the first).
//
// Names are classified as in a folder (layout.RoleOf); names of files that
// are not templates, or containing '/' (files of sub-folders), are ignored.
func Parse(files map[string]string) (*Set, error) {
	src := Source{}
	names := make([]string, 0, len(files))
	for name := range files {
		if layout.RoleOf(name).Template() {
			names = append(names, name)
		}
	}
	// Sorted, so that when two files define the same helper the winner does
	// not change from one run to the next, and the first error is stable.
	slices.Sort(names)
	for _, name := range names {
		src.Files = append(src.Files, SourceFile{Name: name, Text: files[name]})
		switch layout.RoleOf(name) {
		case layout.Child:
			src.Children = append(src.Children, name)
		case layout.Status:
			src.Status = true
		}
	}
	return ParseSource(src)
}

// Source is a set of templates to parse whose roles the caller knows: a
// folder's (Parse) or a Helm chart's, whose files sit in sub-folders
// (engine/chart).
type Source struct {
	// Files are parsed in order: where two define the same named
	// template, the later one wins.
	Files []SourceFile
	// Children are the names of the files whose output are the children,
	// rendered in this order.
	Children []string
	// Status: the file status.yaml renders the status.
	Status bool
}

// SourceFile is one template file of a Source.
type SourceFile struct {
	Name, Text string
}

// ParseSource parses src. Errors name file:line, as Parse's.
func ParseSource(src Source) (*Set, error) {
	funcs, scalar := parseFuncs()
	s := &Set{
		tmpl:     template.New(rootName).Option("missingkey=zero").Funcs(funcs),
		children: slices.Clone(src.Children),
		status:   src.Status,
		files:    make(map[string]struct{}, len(src.Files)),
		scalar:   scalar,
		free:     make(chan *instance, freeInstances),
	}
	for _, f := range src.Files {
		if _, err := s.tmpl.New(f.Name).Parse(f.Text); err != nil {
			return nil, parseError(f.Name, err)
		}
		s.files[f.Name] = struct{}{}
	}
	for _, name := range s.children {
		if _, ok := s.files[name]; !ok {
			return nil, &Error{Template: name, Message: "child template not among the files parsed"}
		}
	}
	if _, ok := s.files[statusFile]; src.Status && !ok {
		return nil, &Error{Template: statusFile, Message: "status template not among the files parsed"}
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
