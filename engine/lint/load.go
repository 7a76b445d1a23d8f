package lint

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

// Reserved names of a folder (layout's).
const (
	statusFile = layout.StatusFile
	crdFile    = layout.CRDFile
)

// folder is one kind folder being linted.
type folder struct {
	dir  string // as found under Options.Templates
	kind *catalog.Kind
	// templates holds the text of every template file: helpers, children
	// and status.yaml, by file name.
	templates map[string]string
	kindYAML  string
	// fileSets are the per-child sets of fileSet, built when first needed.
	fileSets map[string]*render.Set
	// required are the literal messages of required calls, by file.
	required map[string][]string
}

// at is a finding about a file of the folder.
func (f *folder) at(file string, line int, code, format string, args ...any) Finding {
	if f.kind != nil {
		// A chart's templates are named as Helm names them, from the
		// chart's name (web/templates/x.yaml): the file is in the folder.
		file = f.kind.FileOf(file)
	}
	return Finding{File: path(f.dir, file), Line: line, Severity: severityOf[code], Code: code, Message: fmt.Sprintf(format, args...)}
}

// loadFolder loads dir as the catalog does, and reports every problem of
// every file rather than the first: kind.yaml on its own, each template
// parsed on its own. kind is nil when the folder would not load.
func loadFolder(dir string) (*folder, []Finding) {
	f := &folder{dir: dir, templates: map[string]string{}, fileSets: map[string]*render.Set{}}
	files, err := catalog.ReadFolder(os.DirFS(dir))
	if err != nil {
		return f, []Finding{f.at("", 0, CodeFolder, "%v", err)}
	}
	data, ok := files[catalog.KindFile]
	if !ok {
		return f, []Finding{f.at(catalog.KindFile, 0, CodeKindYAML, "read %s: %v", catalog.KindFile, fs.ErrNotExist)}
	}
	f.kindYAML = string(data)
	var out []Finding
	if _, chart := files[layout.ChartFile]; !chart {
		// A chart's files are Helm's: they load as one (Compile below,
		// with Helm's loader), not file by file.
		out = f.kindAlone(files)
		f.templates = files.Templates()
		out = append(out, f.parseEach()...)
	}
	for _, fd := range out {
		if fd.Severity == Error {
			return f, out
		}
	}
	k, err := catalog.Compile(filepath.Base(dir), dir, files)
	if err != nil {
		return f, append(out, f.mistake(err, CodeFolder))
	}
	f.kind = k
	return f, out
}

// kindAlone checks kind.yaml on its own, beside the names of the folder's
// other files (empty, so that a broken template is reported once, for its
// own file): the dependsOn and crd.yaml checks need to know them.
// status.yaml has its own finding (LNT003).
func (f *folder) kindAlone(files layout.Files) []Finding {
	alone := layout.Files{catalog.KindFile: files[catalog.KindFile]}
	for name := range files {
		if name != catalog.KindFile && name != statusFile {
			alone[name] = nil
		}
	}
	if _, err := catalog.Compile(filepath.Base(f.dir), f.dir, alone); err != nil {
		return []Finding{f.mistake(err, CodeKindYAML)}
	}
	return nil
}

// mistake is the finding of err, an error of catalog or engine/crd about
// the folder: where the mistake was found, it was made a *render.Error
// with its file, line and code, read here as they are, never from the
// message. An error that names no file (the folder's own) is reported
// with code on the folder.
func (f *folder) mistake(err error, code string) Finding {
	re, ok := errors.AsType[*render.Error](err)
	if !ok || re.Template == "" {
		return f.at("", 0, code, "%v", err)
	}
	if re.Code != "" {
		code = re.Code
	} else {
		// A template the folder's Set could not make: the parse.
		code = CodeParse
	}
	return f.at(re.Template, re.Line, code, "%s", re.Message)
}

// parseEach parses every template file alone, so that every broken file is
// reported, not the first of the set, and reports the helpers two files
// define.
func (f *folder) parseEach() []Finding {
	var out []Finding
	defined := map[string]string{} // define name -> file that defines it first
	names := slices.Sorted(maps.Keys(f.templates))
	for _, name := range names {
		set, err := render.Parse(map[string]string{name: f.templates[name]})
		if err != nil {
			var re *render.Error
			if errors.As(err, &re) {
				out = append(out, f.at(name, re.Line, CodeParse, "%s", re.Message))
			} else {
				out = append(out, f.at(name, 0, CodeParse, "%v", err))
			}
			continue
		}
		trees := set.Trees()
		var defines []string
		for t := range trees {
			if t != name {
				defines = append(defines, t)
			}
		}
		slices.Sort(defines)
		for _, d := range defines {
			// Files are read in name order: the later file's define wins.
			if first, dup := defined[d]; dup {
				out = append(out, f.at(name, treeLine(trees[d], trees[d].Root), CodeDuplicateDefine,
					"template %q is also defined in %s; the definition of the file last in name order (this one) wins", d, first))
				continue
			}
			defined[d] = name
		}
	}
	return out
}

// servedKind reads the apiVersion and kind of a kind.yaml that may not
// load, so that the samples of a broken folder are not reported as
// samples no folder serves.
func servedKind(kindYAML string) (apiVersion, kind string) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	_ = yaml.Unmarshal([]byte(kindYAML), &head)
	return head.APIVersion, head.Kind
}

// keyLine is the 1-based line of the first `key:` in text (the key plain
// or quoted, possibly after "- "), 0 when there is none.
func keyLine(text, key string) int {
	q := regexp.QuoteMeta(key)
	re := regexp.MustCompile(`(?m)^[ \t]*(?:-[ \t]+)?(?:` + q + `|"` + q + `"|'` + q + `')[ \t]*:`)
	if loc := re.FindStringIndex(text); loc != nil {
		return strings.Count(text[:loc[0]], "\n") + 1
	}
	return 0
}

// textLine is the 1-based line of the first occurrence of s in text, 0 when
// there is none.
func textLine(text, s string) int {
	if i := strings.Index(text, s); i >= 0 {
		return strings.Count(text[:i], "\n") + 1
	}
	return 0
}
