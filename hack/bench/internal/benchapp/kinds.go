package benchapp

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Kind is one way of serving the BenchApp (the bench's -kind): the
// operator's --templates, and what the engine writes that differs by kind,
// so that the limit writes it too (writes.go).
type Kind struct {
	Name string
	// Templates is the operator's --templates, from the repository root;
	// Folder the kind's folder in it.
	Templates, Folder string
	// Prefix of the operator.tmplop.io/template annotation: a chart's
	// templates are named as Helm names them (benchapp/templates/x.yaml), a
	// folder's by their file name.
	Prefix string
	// Chart is status.chart of a chart kind (Chart.yaml's name and
	// version); a folder's status is status.yaml's fields instead.
	Chart map[string]any
	// Files is the base name of the bench report's files in -out.
	Files string
}

// Kinds are the kinds, the folder first.
var Kinds = []Kind{
	{Name: "folder", Templates: "hack/bench/templates", Folder: "benchapp", Files: "benchmarks"},
	{Name: "chart", Templates: "hack/bench/charts", Folder: "benchapp", Prefix: "benchapp/templates/",
		Chart: map[string]any{"name": "benchapp", "version": "0.1.0"}, Files: "benchmarks-chart"},
}

// KindNamed returns the kind of that name; "" is the folder.
func KindNamed(name string) (Kind, error) {
	if name == "" {
		name = Kinds[0].Name
	}
	i := slices.IndexFunc(Kinds, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		var names []string
		for _, k := range Kinds {
			names = append(names, k.Name)
		}
		return Kind{}, fmt.Errorf("-kind: %q is none of %s", name, strings.Join(names, ", "))
	}
	return Kinds[i], nil
}

// Template is the template annotation of a child rendered from file.
func (k Kind) Template(file string) string { return k.Prefix + file }

// ShardedFiles is the base name of the -shards report's files in -out.
func (k Kind) ShardedFiles() string { return k.Files + "-sharded" }

// Dir is the kind's folder, from the repository root.
func (k Kind) Dir() string { return path.Join(k.Templates, k.Folder) }
