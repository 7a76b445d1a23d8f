package catalog

import (
	"errors"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog/childkinds"
)

// ChildKinds are the kinds the folder's child templates can render, read
// from their text (childkinds.Read), then the ones kind.yaml's children
// declares. A manifest whose kind cannot be known is an error naming its
// file and line, unless kind.yaml declares children: then the declared
// kinds are taken to be what such manifests render. Worked out once per
// folder, when first asked (operator rbac, lint).
func (k *Kind) ChildKinds() ([]childkinds.Kind, error) {
	if k.childKinds == nil {
		return k.analyzeChildKinds()
	}
	return k.childKinds()
}

func (k *Kind) analyzeChildKinds() ([]childkinds.Kind, error) {
	children, unknown, err := childkinds.Read(k.Templates, k.NeverApplied())
	if err != nil {
		return nil, fmt.Errorf("%s%c%w", k.Dir, filepath.Separator, err)
	}
	if len(unknown) > 0 && len(k.Spec.Children) == 0 {
		var errs []error
		for _, u := range unknown {
			errs = append(errs, fmt.Errorf("%s: cannot know statically which kind this manifest is (%s); declare the kinds it can render in %s children",
				filepath.Join(k.Dir, u.Where.String()), u.Reason, filepath.Join(k.Dir, KindFile)))
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
			children = append(children, childkinds.Kind{APIVersion: c.APIVersion, Kind: c.Kind, Where: childkinds.Place{File: KindFile}})
		}
	}
	return children, nil
}
