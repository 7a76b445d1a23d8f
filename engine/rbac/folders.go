package rbac

import (
	"path/filepath"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/catalog/childkinds"
)

// Folder is what one kind folder needs.
type Folder struct {
	Kind *catalog.Kind
	// Children are the kinds its templates render, and those kind.yaml's
	// children declares (catalog.Kind.ChildKinds).
	Children []childkinds.Kind
}

// Path is the folder's path, with forward slashes.
func (f *Folder) Path() string { return filepath.ToSlash(f.Kind.Dir) }

// AnalyzeFolder is k with the child kinds its model holds; an error names
// the file and line of a manifest whose kind cannot be known.
func AnalyzeFolder(k *catalog.Kind) (*Folder, error) {
	children, err := k.ChildKinds()
	if err != nil {
		return nil, err
	}
	return &Folder{Kind: k, Children: children}, nil
}
