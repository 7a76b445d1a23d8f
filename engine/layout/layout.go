// Package layout is the contract of a kind folder's files: which names are
// reserved, what role every other file plays, and how a folder's files are
// read. It is the one place these rules are written: catalog loads folders
// with it, render classifies the files it parses with it, lint reports on
// the same files, and a new folder format (a Helm chart) maps its files
// onto these roles.
//
// It imports nothing of the engine, so that every step of the flow can use
// it:
//
//	layout (this package): a folder's files and their roles
//	  -> catalog: files -> Kind (kind.yaml, parsed templates, ...)
//	  -> render: parses the template roles
package layout

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// Reserved file names of a kind folder.
const (
	// KindFile makes a folder a kind folder: the kind it serves and how.
	KindFile = "kind.yaml"
	// CRDFile is the folder's own CustomResourceDefinition, the
	// alternative to kind.yaml's short schema. Not a template.
	CRDFile = "crd.yaml"
	// StatusFile renders the object's .status after the children are
	// applied.
	StatusFile = "status.yaml"
	// ChartFile makes a folder a Helm chart (engine/chart): its files are
	// the chart's, read as Helm reads them, and kind.yaml beside it says
	// which kind it serves.
	ChartFile = "Chart.yaml"
)

// Role is what a file of a kind folder is.
type Role int

const (
	// Ignored files are never read as templates: sub-folders, dotfiles
	// (editor swap files, a mounted ConfigMap volume's ..data), and any
	// name without a YAML extension (README.md).
	Ignored Role = iota
	// Kind is kind.yaml.
	Kind
	// CRD is crd.yaml.
	CRD
	// Helper files (`_*`) hold named templates and print nothing.
	Helper
	// Child files (`*.yaml`, `*.yml`) render the children.
	Child
	// Status is status.yaml.
	Status
	// Chart is Chart.yaml: the folder is a Helm chart.
	Chart
	// ChartArchive is a packaged chart (`*.tgz`), the form a chart takes
	// in a ConfigMap, whose keys cannot hold its sub-folders.
	ChartArchive
	// Conversion files (`convert.<from>.<to>.yaml`) render an object of
	// the kind's version <from> at version <to> (engine/convert). They
	// are templates, but never children: render.Parse leaves them out of
	// a folder's Set, and engine/convert parses them as a Set of their own.
	Conversion
)

// conversionPrefix and conversionSuffix frame a conversion file's name.
const (
	conversionPrefix = "convert."
	conversionSuffix = ".yaml"
)

// ConversionFile is the name of the template that converts an object of
// the kind's version from to version to: convert.<from>.<to>.yaml.
func ConversionFile(from, to string) string {
	return conversionPrefix + from + "." + to + conversionSuffix
}

// ParseConversion reads the versions of a conversion file's name
// (ConversionFile); ok is false for any other name. A version is a
// DNS-1035 label, so it holds no dot: a name with another number of dots
// is not a conversion (a child template named convert.yaml stays one).
func ParseConversion(name string) (from, to string, ok bool) {
	rest, found := strings.CutPrefix(name, conversionPrefix)
	if !found {
		return "", "", false
	}
	if rest, found = strings.CutSuffix(rest, conversionSuffix); !found {
		return "", "", false
	}
	from, to, found = strings.Cut(rest, ".")
	if !found || from == "" || to == "" || strings.Contains(to, ".") {
		return "", "", false
	}
	return from, to, true
}

// Template reports whether files of role r are parsed as templates of the
// folder's Set (render.Parse): a conversion is a template too, but of a Set
// of its own (engine/convert), so it is not one of these.
func (r Role) Template() bool { return r == Helper || r == Child || r == Status }

func (r Role) String() string {
	switch r {
	case Kind:
		return "kind"
	case CRD:
		return "crd"
	case Helper:
		return "helper"
	case Child:
		return "child"
	case Status:
		return "status"
	case Chart:
		return "chart"
	case ChartArchive:
		return "chart archive"
	case Conversion:
		return "conversion"
	}
	return "ignored"
}

// RoleOf classifies a top-level file name of a kind folder.
func RoleOf(name string) Role {
	switch {
	case name == "" || strings.ContainsAny(name, `/\`):
		// Only the top level is a folder's; callers may pass other names.
		return Ignored
	case strings.HasPrefix(name, "."):
		return Ignored
	case strings.HasPrefix(name, "_"):
		return Helper
	case name == KindFile:
		return Kind
	case name == CRDFile:
		return CRD
	case name == StatusFile:
		return Status
	case name == ChartFile:
		return Chart
	}
	if _, _, ok := ParseConversion(name); ok {
		return Conversion
	}
	switch path.Ext(name) {
	case ".tgz":
		return ChartArchive
	case ".yaml", ".yml":
		return Child
	}
	return Ignored
}

// Files are the top-level files of a kind folder that a role reads, by
// name: read once, so that what is fingerprinted, parsed and linted is the
// same bytes.
type Files map[string][]byte

// Read reads the files of fsys (a directory's os.DirFS, a ConfigMap's
// keys) that have a role. Sub-folders, symlinks to folders and ignored
// names are not read.
func Read(fsys fs.FS) (Files, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read folder: %w", err)
	}
	files := Files{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || RoleOf(name) == Ignored {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			// A symlink reports its own type: skip it when it points to a folder.
			if info, err := fs.Stat(fsys, name); err == nil && info.IsDir() {
				continue
			}
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		files[name] = data
	}
	return files, nil
}

// FromMap keeps the files of m that have a role: a folder given as data (a
// ConfigMap's keys, a scaffold), read as Read reads a directory.
func FromMap(m map[string][]byte) Files {
	files := Files{}
	for name, data := range m {
		if RoleOf(name) != Ignored {
			files[name] = data
		}
	}
	return files
}

// Names returns the names of the files, sorted.
func (f Files) Names() []string {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Templates returns the text of the template files (helpers, children,
// status.yaml), by name.
func (f Files) Templates() map[string]string {
	out := make(map[string]string, len(f))
	for name, data := range f {
		if RoleOf(name).Template() {
			out[name] = string(data)
		}
	}
	return out
}

// Conversions returns the text of the conversion templates, by name.
func (f Files) Conversions() map[string]string {
	out := map[string]string{}
	for name, data := range f {
		if RoleOf(name) == Conversion {
			out[name] = string(data)
		}
	}
	return out
}

// Fingerprint hashes the names and contents of the files: it changes
// exactly when reloading the folder could change what it renders.
func (f Files) Fingerprint() string {
	h := sha256.New()
	for _, name := range f.Names() {
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write(f[name])
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
