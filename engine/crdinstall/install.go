package crdinstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
)

// DefaultEstablishTimeout bounds the wait for an applied CRD's Established
// condition; the API server sets it within a second or so.
const DefaultEstablishTimeout = 30 * time.Second

var crdResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// Installer installs the CRDs of kind folders: the one type of this package
// that talks to the cluster.
type Installer struct {
	dyn          dynamic.Interface
	fieldManager string
	forKind      func(*catalog.Kind) (*apiextensionsv1.CustomResourceDefinition, error)
	none         error
	// EstablishTimeout bounds the wait for Established; 0: DefaultEstablishTimeout.
	EstablishTimeout time.Duration
}

// New returns an Installer that applies as fieldManager the CRD that
// forKind (engine/crd's ForKind) returns for a folder. A folder without one
// (forKind returns an error that is none, such as crd.ErrNoSchema, or a nil
// CRD) is left alone: its CRD is installed some other way.
//
//	crdinstall.New(cfg, fieldManager, crd.ForKind, crd.ErrNoSchema)
func New(cfg *rest.Config, fieldManager string, forKind func(*catalog.Kind) (*apiextensionsv1.CustomResourceDefinition, error), none error) (*Installer, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return NewForClient(dyn, fieldManager, forKind, none), nil
}

// NewForClient is New with a dynamic client.
func NewForClient(dyn dynamic.Interface, fieldManager string, forKind func(*catalog.Kind) (*apiextensionsv1.CustomResourceDefinition, error), none error) *Installer {
	return &Installer{dyn: dyn, fieldManager: fieldManager, forKind: forKind, none: none}
}

// Install makes kind k's CRD the folder's and waits until it is
// Established. A change that Check refuses is not applied: the error is a
// *RefusedError naming what would break. A folder without a CRD is logged
// and left alone.
func (i *Installer) Install(ctx context.Context, k *catalog.Kind) error {
	log := klog.FromContext(ctx).WithValues("folder", k.Dir, "kind", k.GVK.GroupKind().String())
	next, err := i.forKind(k)
	if err != nil && (i.none == nil || !errors.Is(err, i.none)) {
		return fmt.Errorf("the folder's CRD: %w", err)
	}
	if err != nil || next == nil {
		log.Info("No CRD in the kind folder (no crd.yaml, no schema in kind.yaml); not installing one")
		return nil
	}
	if err := matches(next, k); err != nil {
		return err
	}
	live, err := i.get(ctx, next.Name)
	if err != nil {
		return err
	}
	if live != nil {
		err := Check(live, next, func(version string) ([]unstructured.Unstructured, error) {
			return i.list(ctx, schema.GroupVersionResource{Group: live.Spec.Group, Version: version, Resource: live.Spec.Names.Plural})
		})
		if err != nil {
			return err
		}
	}
	applied, err := i.apply(ctx, next)
	if err != nil {
		return err
	}
	switch {
	case live == nil:
		log.Info("CRD created", "crd", next.Name)
	case applied.GetGeneration() != live.Generation:
		log.Info("CRD updated", "crd", next.Name, "generation", applied.GetGeneration())
	}
	return i.waitEstablished(ctx, next.Name)
}

// matches checks that the folder's CRD is the CRD of the folder's kind.
func matches(c *apiextensionsv1.CustomResourceDefinition, k *catalog.Kind) error {
	gvk := k.GVK
	if c.Spec.Group != gvk.Group || c.Spec.Names.Kind != gvk.Kind {
		return fmt.Errorf("the folder's CRD %s defines %s.%s, but kind.yaml serves %s", c.Name, c.Spec.Names.Kind, c.Spec.Group, gvk.GroupKind())
	}
	if want := c.Spec.Names.Plural + "." + c.Spec.Group; c.Name != want {
		return fmt.Errorf("the folder's CRD is named %q; a CRD must be named <plural>.<group>, %q", c.Name, want)
	}
	if !slices.ContainsFunc(c.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == gvk.Version && v.Served }) {
		return fmt.Errorf("the folder's CRD %s does not serve version %s, which kind.yaml watches", c.Name, gvk.Version)
	}
	return nil
}

func (i *Installer) get(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	u, err := i.dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get CRD %s: %w", name, err)
	}
	var c apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
		return nil, fmt.Errorf("read CRD %s: %w", name, err)
	}
	return &c, nil
}

// list lists every object at gvr, a page at a time.
func (i *Installer) list(ctx context.Context, gvr schema.GroupVersionResource) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := i.dyn.Resource(gvr).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// apply applies c with server-side apply. Not forced: a field of the CRD
// that another manager set to another value (kubectl, Helm, a GitOps tool)
// is a conflict to report, not a value to take over, so that two owners of
// one CRD never undo each other's changes in turn.
func (i *Installer) apply(ctx context.Context, c *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, fmt.Errorf("CRD %s: %w", c.Name, err)
	}
	delete(obj, "status")
	meta := map[string]any{"name": c.Name}
	if len(c.Labels) > 0 {
		meta["labels"] = c.Labels
	}
	if len(c.Annotations) > 0 {
		meta["annotations"] = c.Annotations
	}
	obj["metadata"] = meta
	obj["apiVersion"] = apiextensionsv1.SchemeGroupVersion.String()
	obj["kind"] = "CustomResourceDefinition"
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("CRD %s: %w", c.Name, err)
	}
	u, err := i.dyn.Resource(crdResource).Patch(ctx, c.Name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: i.fieldManager})
	if err != nil {
		if apierrors.IsConflict(err) {
			return nil, fmt.Errorf("apply CRD %s as field manager %s: %w (another manager owns these fields with other values: "+
				"leave the CRD to it and remove it from the folder, or hand the fields over with kubectl apply --server-side --force-conflicts --field-manager=%s)",
				c.Name, i.fieldManager, err, i.fieldManager)
		}
		return nil, fmt.Errorf("apply CRD %s: %w", c.Name, err)
	}
	return u, nil
}

// waitEstablished waits until the CRD's Established condition is True, and
// fails at once when its names are not accepted.
func (i *Installer) waitEstablished(ctx context.Context, name string) error {
	timeout := i.EstablishTimeout
	if timeout <= 0 {
		timeout = DefaultEstablishTimeout
	}
	var last string
	var refused error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		c, err := i.get(ctx, name)
		if err != nil || c == nil {
			last = fmt.Sprint(err)
			return false, nil
		}
		for _, cond := range c.Status.Conditions {
			switch {
			case cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse:
				refused = fmt.Errorf("CRD %s: names not accepted: %s: %s", name, cond.Reason, cond.Message)
				return false, refused
			case cond.Type == apiextensionsv1.Established:
				if cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
				last = cond.Reason + ": " + cond.Message
			}
		}
		return false, nil
	})
	if refused != nil {
		return refused
	}
	if err != nil {
		return fmt.Errorf("CRD %s not Established within %s (%s): %w", name, timeout, last, err)
	}
	return nil
}
