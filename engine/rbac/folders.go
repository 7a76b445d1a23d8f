package rbac

import (
	"errors"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog"
)

// LoadFolders loads every kind folder of dir, strictly (catalog.LoadEvery).
func LoadFolders(dir string) ([]*catalog.Kind, error) { return catalog.LoadEvery(dir) }

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
