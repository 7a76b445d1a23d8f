// Package scaffold writes a new kind folder that runs as it is: kind.yaml
// with a short schema, a child template and status.yaml, the CRD generated
// from that schema by engine/crd, and a sample object. It is
// `operator create kind` (docs/create.md).
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"text/template"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/crd"
	"github.com/tmplop/operator/engine/layout"
)

// Options say what to scaffold and where.
type Options struct {
	// Group, Version and Kind name the new kind: demo.example.com, v1alpha1, WebApp.
	Group, Version, Kind string
	// Namespaced is the kind's scope (false: cluster-scoped).
	Namespaced bool
	// Dir is the templates directory: the folder is Dir/<lower-case kind>.
	Dir string
	// Examples and CRDs are the directories of the sample object and the CRD,
	// each written as <lower-case kind>.yaml.
	Examples, CRDs string
}

// Result is a scaffold: its files, and the CRD's names for what to run next.
type Result struct {
	Files []File
	// Plural is the resource (kubectl get <plural>); CRDName the CRD's name.
	Plural, CRDName string
}

// File is one scaffolded file.
type File struct {
	// Path is the file's path: Dir, Examples or CRDs joined with its name.
	Path string
	Data []byte
}

//go:embed files/*.tmpl
var files embed.FS

// folderFiles are the kind folder's files, in the order they are written
// and listed, from files/<name>.tmpl.
var folderFiles = []string{catalog.KindFile, "_helpers.tpl", "deployment.yaml", "status.yaml"}

// The scaffold's own templates use [[ ]], so that the {{ }} of the kind
// folder's templates are plain text to them. Parsed when `create` first
// needs them, not at init: every other command (run above all) would
// otherwise hold them (65 KB of heap, GODEBUG=inittrace=1).
var tmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("scaffold").Delims("[[", "]]").Option("missingkey=error").ParseFS(files, "files/*.tmpl"))
})

var (
	versionRE = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)
	kindRE    = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
)

// maxKind keeps the folder name, the plural and the sample's name within a
// DNS label (63) with room for the plural's suffix and "-sample".
const maxKind = 48

// Validate checks the group, version and kind.
func (o Options) Validate() error {
	var errs []error
	switch g := o.Group; {
	case g == "":
		errs = append(errs, errors.New("--group is required (a DNS subdomain with a dot, such as demo.example.com)"))
	case len(validation.IsDNS1123Subdomain(g)) > 0:
		errs = append(errs, fmt.Errorf("--group %q: not a DNS subdomain (lower-case letters, digits, '-' and '.', such as demo.example.com): %s", g, strings.Join(validation.IsDNS1123Subdomain(g), "; ")))
	case !strings.Contains(g, "."):
		errs = append(errs, fmt.Errorf("--group %q: a custom resource's group needs a dot, such as %s.example.com", g, g))
	case catalog.BuiltInGroup(g) || g == "k8s.io" || strings.HasSuffix(g, ".k8s.io") || g == "kubernetes.io" || strings.HasSuffix(g, ".kubernetes.io"):
		errs = append(errs, fmt.Errorf("--group %q: *.k8s.io and *.kubernetes.io belong to Kubernetes; use a domain of your own", g))
	}
	switch v := o.Version; {
	case v == "":
		errs = append(errs, errors.New("--version is required (a Kubernetes API version, such as v1alpha1, v1beta1 or v1)"))
	case !versionRE.MatchString(v):
		errs = append(errs, fmt.Errorf("--version %q: not a Kubernetes API version: v<N>, v<N>alpha<M> or v<N>beta<M>, such as v1alpha1", v))
	}
	switch k := o.Kind; {
	case k == "":
		errs = append(errs, errors.New("--kind is required (UpperCamelCase, such as WebApp)"))
	case !kindRE.MatchString(k):
		errs = append(errs, fmt.Errorf("--kind %q: not UpperCamelCase: an upper-case ASCII letter, then letters and digits, such as WebApp", k))
	case len(k) > maxKind:
		errs = append(errs, fmt.Errorf("--kind %q: longer than %d characters", k, maxKind))
	}
	for _, d := range []struct{ flag, dir string }{{"--dir", o.Dir}, {"--examples", o.Examples}, {"--crds", o.CRDs}} {
		if d.dir == "" {
			errs = append(errs, fmt.Errorf("%s must not be empty", d.flag))
		}
	}
	return errors.Join(errs...)
}

// Folder is the kind folder's name: the lower-case kind.
func (o Options) Folder() string { return strings.ToLower(o.Kind) }

// data is what the scaffold's templates see.
type data struct {
	Group, Version, Kind string
	Namespaced           bool
	// Folder is the folder's name; Plural the resource.
	Folder, Plural string
	// Dir and CRDs are the directories as given; CRDPath and ExamplePath
	// the files, in slash form for the comments.
	Dir, CRDs, CRDPath, ExamplePath string
}

// Files returns the scaffold's files without writing anything: the kind
// folder's, then the CRD, then the sample. The CRD is engine/crd's for the
// kind.yaml written here, as `operator crd` writes it.
func Files(o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	folder := o.Folder()
	d := data{
		Group: o.Group, Version: o.Version, Kind: o.Kind, Namespaced: o.Namespaced,
		Folder: folder, Dir: filepath.ToSlash(o.Dir), CRDs: filepath.ToSlash(o.CRDs),
		CRDPath:     path.Join(filepath.ToSlash(o.CRDs), folder+".yaml"),
		ExamplePath: path.Join(filepath.ToSlash(o.Examples), folder+".yaml"),
		// kind.yaml leaves the plural to engine/crd.
		Plural: crd.Pluralize(folder),
	}
	fsys, out, err := renderFolder(d)
	if err != nil {
		return nil, err
	}
	k, def, err := generate(folder, o.Dir, fsys)
	if err != nil {
		return nil, err
	}
	// The header names kind.yaml as `operator crd --templates <Dir>` does.
	source := path.Join(filepath.ToSlash(filepath.Join(o.Dir, folder)), crd.SourceFile(k))
	crdYAML, err := crd.YAML(def, source)
	if err != nil {
		return nil, fmt.Errorf("scaffold: CRD of %s: %w", o.Kind, err)
	}
	example, err := execute("example.yaml", d)
	if err != nil {
		return nil, err
	}
	out = append(out,
		File{Path: filepath.Join(o.CRDs, folder+".yaml"), Data: crdYAML},
		File{Path: filepath.Join(o.Examples, folder+".yaml"), Data: example},
	)
	return &Result{Files: out, Plural: def.Spec.Names.Plural, CRDName: def.Name}, nil
}

// renderFolder renders the kind folder's files, for the catalog and as
// Files under d.Dir.
func renderFolder(d data) (layout.Files, []File, error) {
	files := layout.Files{}
	var out []File
	for _, name := range folderFiles {
		b, err := execute(name, d)
		if err != nil {
			return nil, nil, err
		}
		files[name] = b
		out = append(out, File{Path: filepath.Join(filepath.FromSlash(d.Dir), d.Folder, name), Data: b})
	}
	return files, out, nil
}

// generate loads the folder as the operator does and returns its CRD: the
// scaffold's templates must parse, its kind.yaml must load, and its schema
// must make a CRD.
func generate(folder, dir string, files layout.Files) (*catalog.Kind, *apiextensionsv1.CustomResourceDefinition, error) {
	k, err := catalog.Compile(folder, filepath.Join(dir, folder), files)
	if err != nil {
		return nil, nil, fmt.Errorf("scaffold: the scaffolded folder does not load: %w", err)
	}
	def, err := crd.ForKind(k)
	if err != nil {
		return nil, nil, fmt.Errorf("scaffold: the scaffolded kind.yaml makes no CRD: %w", err)
	}
	return k, def, nil
}

func execute(name string, d data) ([]byte, error) {
	var b bytes.Buffer
	if err := tmpl().ExecuteTemplate(&b, name+".tmpl", d); err != nil {
		return nil, fmt.Errorf("scaffold: %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// ExistsError lists the paths that already exist: the scaffold writes
// nothing over them.
type ExistsError struct{ Paths []string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("refusing to overwrite what exists (nothing was written; remove or move it, or choose another --kind or directories):\n  %s",
		strings.Join(e.Paths, "\n  "))
}

// Write writes the scaffold and returns its files. It first checks every
// path, the kind folder included, and writes nothing when one exists
// (*ExistsError). Files are created exclusively, so a file that appears
// meanwhile is not overwritten either.
func Write(o Options) (*Result, error) {
	res, err := Files(o)
	if err != nil {
		return nil, err
	}
	check := []string{filepath.Join(o.Dir, o.Folder())}
	for _, f := range res.Files {
		check = append(check, f.Path)
	}
	var exist []string
	for _, p := range check {
		if _, err := os.Lstat(p); err == nil {
			exist = append(exist, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("scaffold: %w", err)
		}
	}
	if len(exist) > 0 {
		return nil, &ExistsError{Paths: exist}
	}
	if err := os.MkdirAll(check[0], 0o755); err != nil {
		return nil, fmt.Errorf("scaffold: %w", err)
	}
	for _, f := range res.Files {
		if err := writeNew(f); err != nil {
			return nil, fmt.Errorf("scaffold: %w", err)
		}
	}
	return res, nil
}

func writeNew(f File) error {
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return err
	}
	w, err := os.OpenFile(f.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := w.Write(f.Data); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}
