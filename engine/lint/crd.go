package lint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/render"
)

// CRD is a kind's CustomResourceDefinition and where it comes from.
type CRD struct {
	Object *apiextensionsv1.CustomResourceDefinition
	// File and Line locate it in findings; File is a path as the user
	// named it (a --crds file, a folder's crd.yaml or kind.yaml).
	File string
	Line int
}

// CRDSource finds the CRD of the kind a folder serves.
type CRDSource interface {
	// CRD returns k's CRD, nil (and no error) when the source has none.
	CRD(k *catalog.Kind) (*CRD, error)
}

// Scoper is a CRDSource that also tells the scope of a custom kind, for
// children of custom kinds.
type Scoper interface {
	Namespaced(gk schema.GroupKind) (namespaced, known bool)
}

// Chain asks each source in turn; the first CRD found wins.
func Chain(sources ...CRDSource) CRDSource { return chain(sources) }

type chain []CRDSource

func (c chain) CRD(k *catalog.Kind) (*CRD, error) {
	for _, s := range c {
		if s == nil {
			continue
		}
		crd, err := s.CRD(k)
		if err != nil || crd != nil {
			return crd, err
		}
	}
	return nil, nil
}

func (c chain) Namespaced(gk schema.GroupKind) (bool, bool) {
	for _, s := range c {
		if sc, ok := s.(Scoper); ok {
			if ns, known := sc.Namespaced(gk); known {
				return ns, true
			}
		}
	}
	return false, false
}

// KindCRD adapts a function that makes a folder's CRD, such as
// engine/crd's ForKind (the folder's crd.yaml, or the CRD generated from
// kind.yaml's schema): none is the error it returns when it has no CRD for
// the folder (crd.ErrNoSchema). Findings name the folder's crd.yaml when
// there is one, else its kind.yaml.
//
//	lint.Chain(lint.KindCRD(crd.ForKind, crd.ErrNoSchema), files)
func KindCRD(forKind func(*catalog.Kind) (*apiextensionsv1.CustomResourceDefinition, error), none error) CRDSource {
	return kindCRD{forKind: forKind, none: none}
}

type kindCRD struct {
	forKind func(*catalog.Kind) (*apiextensionsv1.CustomResourceDefinition, error)
	none    error
}

func (s kindCRD) CRD(k *catalog.Kind) (*CRD, error) {
	obj, err := s.forKind(k)
	if err != nil {
		if s.none != nil && errors.Is(err, s.none) {
			return nil, nil
		}
		return nil, err
	}
	if obj == nil {
		return nil, nil
	}
	file := filepath.Join(k.Dir, catalog.KindFile)
	if _, err := os.Stat(filepath.Join(k.Dir, crdFile)); err == nil {
		file = filepath.Join(k.Dir, crdFile)
	}
	return &CRD{Object: obj, File: filepath.ToSlash(file)}, nil
}

// CRDFiles is the CRDs of files: *.yaml, *.yml and *.json, multi-document,
// at any depth of the directories given. Documents that are not CRDs are
// skipped.
type CRDFiles struct {
	byGK map[schema.GroupKind]*CRD
}

// ReadCRDFiles reads the CRDs of paths (directories or files). A file that
// cannot be read, or a CRD document that does not decode, is a finding.
func ReadCRDFiles(paths ...string) (*CRDFiles, []Finding) {
	c := &CRDFiles{byGK: map[schema.GroupKind]*CRD{}}
	var out []Finding
	for _, p := range paths {
		err := walkYAML(p, func(file string, data []byte) {
			for _, d := range splitYAML(data) {
				var head struct {
					APIVersion string `json:"apiVersion"`
					Kind       string `json:"kind"`
				}
				if err := yaml.Unmarshal(d.text, &head); err != nil {
					out = append(out, inputError(file, d, &head, err))
					continue
				}
				if head.Kind != "CustomResourceDefinition" || !strings.HasPrefix(head.APIVersion, "apiextensions.k8s.io/") {
					continue
				}
				obj := &apiextensionsv1.CustomResourceDefinition{}
				if err := yaml.Unmarshal(d.text, obj); err != nil {
					out = append(out, inputFinding(file, d.line, "CustomResourceDefinition: %v", err))
					continue
				}
				gk := schema.GroupKind{Group: obj.Spec.Group, Kind: obj.Spec.Names.Kind}
				if prev, dup := c.byGK[gk]; dup {
					out = append(out, inputFinding(file, d.line, "%s is also defined by %s; the first one is used", gk, prev.File))
					continue
				}
				c.byGK[gk] = &CRD{Object: obj, File: path(file), Line: d.line}
			}
		})
		if err != nil {
			out = append(out, inputFinding(p, 0, "%v", err))
		}
	}
	return c, out
}

// CRD implements CRDSource: the CRD of k's group and kind.
func (c *CRDFiles) CRD(k *catalog.Kind) (*CRD, error) {
	return c.byGK[k.GVK.GroupKind()], nil
}

// Namespaced implements Scoper.
func (c *CRDFiles) Namespaced(gk schema.GroupKind) (bool, bool) {
	crd, ok := c.byGK[gk]
	if !ok {
		return false, false
	}
	return crd.Object.Spec.Scope != apiextensionsv1.ClusterScoped, true
}

func inputFinding(file string, line int, format string, args ...any) Finding {
	return Finding{File: path(file), Line: line, Severity: severityOf[CodeInput], Code: CodeInput, Message: fmt.Sprintf(format, args...)}
}

// walkYAML calls fn with every YAML or JSON file of p (a file, or a
// directory at any depth), in name order. Below p it skips hidden
// directories and the directories that are not samples: a kind folder (it
// has a kind.yaml) and a project of its own (it has a templates
// directory, as examples/versions does: its samples are linted with its
// own templates, which may serve other versions of the same kinds).
func walkYAML(p string, fn func(file string, data []byte)) error {
	return filepath.WalkDir(p, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if file != p && (strings.HasPrefix(d.Name(), ".") || notSamples(file)) {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(file)) {
		case ".yaml", ".yml", ".json":
		default:
			if file != p {
				return nil
			}
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		fn(file, data)
		return nil
	})
}

// notSamples reports whether dir is a kind folder or a project of its
// own (walkYAML).
func notSamples(dir string) bool {
	for _, name := range []string{catalog.KindFile, "templates"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// document is one YAML document of a file and its first line.
type document struct {
	line  int // first line of content
	start int // line where text starts
	text  []byte
}

// inputError is the finding of err, which decoding d, a document of
// file, into into (nil: any value) returned: at the line render.YAMLError
// finds, else d's first.
func inputError(file string, d document, into any, err error) Finding {
	re := render.YAMLError(file, d.start, d.text, into, CodeInput, err)
	line := re.Line
	if line == 0 {
		line = d.line
	}
	return inputFinding(file, line, "%s", strings.TrimSpace(re.Message))
}

// splitYAML splits a file into its documents as the engine splits
// streams (render.SplitDocuments), leaving out the blank ones, each with
// its first line of content.
func splitYAML(data []byte) []document {
	var docs []document
	for _, d := range render.SplitDocuments(data) {
		if render.Blank(d.Text) {
			continue
		}
		first := d.Line
		for l := range strings.Lines(string(d.Text)) {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				break
			}
			first++
		}
		docs = append(docs, document{line: first, start: d.Line, text: d.Text})
	}
	return docs
}
