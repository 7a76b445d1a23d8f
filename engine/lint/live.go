package lint

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/tmplop/operator/engine/catalog"
)

// Cluster is what the live check reads of a cluster: CRDs and objects,
// with get and list calls alone. It has no method that writes, so that
// `operator lint --live` cannot change the cluster it checks.
type Cluster interface {
	// CRD returns the CRD of gk, nil (and no error) when the cluster has
	// none.
	CRD(ctx context.Context, gk schema.GroupKind) (*apiextensionsv1.CustomResourceDefinition, error)
	// List calls fn with each object of gvr, in every namespace, read at
	// gvr's version, a page at a time.
	List(ctx context.Context, gvr schema.GroupVersionResource, fn func(*unstructured.Unstructured) error) error
}

// LiveOptions says what to check against a cluster.
type LiveOptions struct {
	// Templates is a directory of kind folders, or one kind folder.
	Templates string
	// Cluster is read, never written.
	Cluster Cluster
}

// LiveKind is what the live check did with one folder's kind.
type LiveKind struct {
	Folder string
	Kind   schema.GroupKind
	// Version is the version the objects were read at: the CRD's storage
	// version.
	Version string
	// Objects is how many objects were read and round-tripped.
	Objects int
	// Skipped says why the kind was not checked, "" when it was.
	Skipped string
}

func (l LiveKind) String() string {
	if l.Skipped != "" {
		return fmt.Sprintf("%s (%s): not checked: %s", l.Kind, l.Folder, l.Skipped)
	}
	return fmt.Sprintf("%s (%s): %d object(s) read at %s and round-tripped through every served version", l.Kind, l.Folder, l.Objects, l.Version)
}

// Live round-trips the objects in the cluster of every kind folder of
// o.Templates that has several versions, through each of its versions
// with the folder's conversion templates, in this process, as LNT104 does
// with the samples: a conversion that fails or does not give an object
// back is an LNT104 finding at the template, naming the object. The
// objects are read at the CRD's storage version, which the API server
// returns as it stores them (an object stored at an older version still
// needs the CRD's conversion to be read). A folder that does not load is
// skipped: Run reports why. The error joins what could not be read.
func Live(ctx context.Context, o LiveOptions) ([]Finding, []LiveKind, error) {
	dirs, err := catalog.FoldersOf(o.Templates)
	if err != nil {
		return nil, nil, err
	}
	var out []Finding
	var kinds []LiveKind
	var errs []error
	for _, d := range dirs {
		// The folder's own mistakes are Run's findings, not repeated here.
		f, _ := loadFolder(d)
		if f.kind == nil {
			av, kind := servedKind(f.kindYAML)
			kinds = append(kinds, LiveKind{Folder: path(d), Kind: schema.FromAPIVersionAndKind(av, kind).GroupKind(),
				Skipped: "the folder does not load (operator lint says why)"})
			continue
		}
		lk := LiveKind{Folder: path(d), Kind: f.kind.GVK.GroupKind()}
		fs, err := f.live(ctx, o.Cluster, &lk)
		out = append(out, fs...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", lk.Kind, err))
		}
		kinds = append(kinds, lk)
	}
	return Sort(out), kinds, errors.Join(errs...)
}

// live reads the folder's objects in the cluster and round-trips each.
func (f *folder) live(ctx context.Context, c Cluster, lk *LiveKind) ([]Finding, error) {
	k := f.kind
	if k.Converter() == nil {
		lk.Skipped = "the folder has one version"
		return nil, nil
	}
	crd, err := c.CRD(ctx, lk.Kind)
	if err != nil {
		return nil, fmt.Errorf("read its CRD: %w", err)
	}
	if crd == nil {
		lk.Skipped = "no CRD in the cluster"
		return nil, nil
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			lk.Version = v.Name
		}
	}
	if lk.Version == "" {
		return nil, fmt.Errorf("its CRD %s has no storage version", crd.Name)
	}
	if !f.hasVersion(lk.Version) {
		lk.Skipped = fmt.Sprintf("the CRD stores it at %s, which the folder does not have", lk.Version)
		return []Finding{f.at(catalog.KindFile, keyLine(f.kindYAML, "apiVersion"), CodeConversion,
			"the cluster's CRD %s stores %s at %s, a version the folder does not have: its objects cannot be converted", crd.Name, k.Spec.Kind, lk.Version)}, nil
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: lk.Version, Resource: crd.Spec.Names.Plural}
	var out []Finding
	err = c.List(ctx, gvr, func(obj *unstructured.Unstructured) error {
		lk.Objects++
		out = append(out, f.liveTrip(ctx, obj)...)
		return ctx.Err()
	})
	if err != nil {
		return out, fmt.Errorf("list %s: %w", gvr, err)
	}
	return out, nil
}

// liveTrip round-trips one object of the cluster: to the hub and back when
// it was read at another version, then from the hub through each other
// served version and back.
func (f *folder) liveTrip(ctx context.Context, obj *unstructured.Unstructured) []Finding {
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	what := fmt.Sprintf("%s %s in the cluster", obj.GetKind(), name)
	hub := obj
	if obj.GetAPIVersion() != f.kind.Spec.APIVersion {
		var fs []Finding
		if hub, fs = f.toHubFrom(ctx, obj.Object, what); hub == nil {
			return fs
		}
	}
	return f.roundTrips(ctx, hub.Object, what, false)
}

// hasVersion reports whether the folder's kind has version, served or
// not.
func (f *folder) hasVersion(version string) bool {
	for _, v := range f.kind.Versions() {
		if v.Name == version {
			return true
		}
	}
	return false
}

// DynamicCluster is the Cluster of a dynamic client: it calls Get and
// List alone. The CRDs are listed once, on the first CRD call; not for
// concurrent use.
func DynamicCluster(client dynamic.Interface) Cluster { return &dynamicCluster{client: client} }

type dynamicCluster struct {
	client dynamic.Interface
	crds   map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition
}

// crdResource is the CustomResourceDefinitions' resource.
var crdResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// livePage is how many objects one list call returns.
const livePage = 500

func (c *dynamicCluster) CRD(ctx context.Context, gk schema.GroupKind) (*apiextensionsv1.CustomResourceDefinition, error) {
	if c.crds == nil {
		// Listed, not got by name: the CRD's plural is the cluster's to
		// say (a CRD installed some other way than from the folder).
		crds := map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition{}
		err := c.List(ctx, crdResource, func(u *unstructured.Unstructured) error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
				return fmt.Errorf("decode CRD %s: %w", u.GetName(), err)
			}
			crds[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crd
			return nil
		})
		if err != nil {
			return nil, err
		}
		c.crds = crds
	}
	return c.crds[gk], nil
}

func (c *dynamicCluster) List(ctx context.Context, gvr schema.GroupVersionResource, fn func(*unstructured.Unstructured) error) error {
	opts := metav1.ListOptions{Limit: livePage}
	for {
		l, err := c.client.Resource(gvr).List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range l.Items {
			if err := fn(&l.Items[i]); err != nil {
				return err
			}
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// LiveSummary is the live check's report of what it read, a line a kind.
func LiveSummary(kinds []LiveKind) string {
	var b strings.Builder
	for _, k := range kinds {
		b.WriteString("live: " + k.String() + "\n")
	}
	return b.String()
}
