package main

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// benchKind is one way of serving the BenchApp (-kind): the operator's
// --templates, and what the engine writes that differs by kind, so that the
// limit writes it too (limit_objects.go).
type benchKind struct {
	name string
	// templates is the operator's --templates, from the repository root;
	// folder the kind's folder in it.
	templates, folder string
	// prefix of the operator.tmplop.io/template annotation: a chart's
	// templates are named as Helm names them (benchapp/templates/x.yaml), a
	// folder's by their file name.
	prefix string
	// chart is status.chart of a chart kind (Chart.yaml's name and
	// version); a folder's status is status.yaml's fields instead.
	chart map[string]any
	// files is the base name of the report's files in -out.
	files string
}

var benchKinds = []benchKind{
	{name: "folder", templates: "hack/bench/templates", folder: "benchapp", files: "benchmarks"},
	{name: "chart", templates: "hack/bench/charts", folder: "benchapp", prefix: "benchapp/templates/",
		chart: map[string]any{"name": "benchapp", "version": "0.1.0"}, files: "benchmarks-chart"},
}

// kindNamed returns the kind of that name; "" is the folder.
func kindNamed(name string) (benchKind, error) {
	if name == "" {
		name = benchKinds[0].name
	}
	i := slices.IndexFunc(benchKinds, func(k benchKind) bool { return k.name == name })
	if i < 0 {
		var names []string
		for _, k := range benchKinds {
			names = append(names, k.name)
		}
		return benchKind{}, fmt.Errorf("-kind: %q is none of %s", name, strings.Join(names, ", "))
	}
	return benchKinds[i], nil
}

// template is the template annotation of a child rendered from file.
func (k benchKind) template(file string) string { return k.prefix + file }

// shardedFiles is the base name of the -shards report's files in -out.
func (k benchKind) shardedFiles() string { return k.files + "-sharded" }

// dir is the kind's folder, from the repository root.
func (k benchKind) dir() string { return path.Join(k.templates, k.folder) }
