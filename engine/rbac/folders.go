package rbac

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/render"
)

// LoadFolders loads the kind folders of dir (or dir itself when it holds a
// kind.yaml). Unlike catalog.Load, which skips broken folders so that the
// others still run, every folder that fails is an error here: RBAC for
// "the folders but one" would be wrong for the one. Errors name the file
// and line, as path/file:line: message.
func LoadFolders(dir string) ([]*catalog.Kind, error) {
	if _, err := os.Stat(filepath.Join(dir, catalog.KindFile)); err == nil {
		k, err := catalog.LoadKind(dir)
		if err != nil {
			return nil, folderError(dir, err)
		}
		return []*catalog.Kind{k}, nil
	}
	kinds, skipped, err := catalog.Load(dir)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, s := range skipped {
		errs = append(errs, folderError(s.Dir, s.Err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(kinds) == 0 {
		return nil, fmt.Errorf("%s: no kind folder (a folder with a %s)", dir, catalog.KindFile)
	}
	return kinds, nil
}

// folderError puts the folder's path before the file:line of err.
func folderError(dir string, err error) error {
	var re *render.Error
	if errors.As(err, &re) && re.Template != "" {
		return &located{path: filepath.Join(dir, re.Template), err: re}
	}
	msg := err.Error()
	if strings.HasPrefix(msg, catalog.KindFile+":") {
		return fmt.Errorf("%s%c%w", dir, filepath.Separator, err)
	}
	return fmt.Errorf("%s: %w", dir, err)
}

// located is a render error with the path of its file: path:line: message.
type located struct {
	path string
	err  *render.Error
}

func (l *located) Error() string {
	if l.err.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", l.path, l.err.Line, l.err.Message)
	}
	return l.path + ": " + l.err.Message
}

func (l *located) Unwrap() error { return l.err }

// Folder is what one kind folder needs.
type Folder struct {
	Kind *catalog.Kind
	// Children are the kinds its templates render, and those kind.yaml's
	// children declares.
	Children []Child
}

// Path is the folder's path, with forward slashes.
func (f *Folder) Path() string { return filepath.ToSlash(f.Kind.Dir) }

// AnalyzeFolder finds the child kinds of k. A manifest whose kind cannot
// be known from the templates' text is an error naming its file and line,
// unless kind.yaml declares children: then the declared kinds are taken
// to be what such manifests render.
func AnalyzeFolder(k *catalog.Kind) (*Folder, error) {
	children, unknown, err := StaticChildren(k.Templates)
	if err != nil {
		return nil, fmt.Errorf("%s%c%w", k.Dir, filepath.Separator, err)
	}
	if len(unknown) > 0 && len(k.Spec.Children) == 0 {
		var errs []error
		for _, u := range unknown {
			errs = append(errs, fmt.Errorf("%s: cannot know statically which kind this manifest is (%s); declare the kinds it can render in %s children",
				filepath.Join(k.Dir, u.Where), u.Reason, filepath.Join(k.Dir, catalog.KindFile)))
		}
		return nil, errors.Join(errs...)
	}
	seen := map[schema.GroupKind]bool{}
	for _, c := range children {
		seen[schema.FromAPIVersionAndKind(c.APIVersion, c.Kind).GroupKind()] = true
	}
	for _, c := range k.Spec.Children {
		gk := schema.FromAPIVersionAndKind(c.APIVersion, c.Kind).GroupKind()
		if !seen[gk] {
			seen[gk] = true
			children = append(children, Child{APIVersion: c.APIVersion, Kind: c.Kind, Where: catalog.KindFile + " children"})
		}
	}
	return &Folder{Kind: k, Children: children}, nil
}
