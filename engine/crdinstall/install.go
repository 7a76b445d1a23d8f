package crdinstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
)

// DefaultEstablishTimeout bounds the wait for an applied CRD's Established
// condition; the API server sets it within a second or so.
const DefaultEstablishTimeout = 30 * time.Second

// crdMapping is the CRD API's, which the installer names itself: no
// discovery is asked (before the first kind starts there is none yet, and
// the CRD API is always served).
var crdMapping = &meta.RESTMapping{
	Resource:         apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"),
	GroupVersionKind: apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
	Scope:            meta.RESTScopeRoot,
}

// Installer installs the CRDs of kind folders: the one type of this package
// that talks to the cluster.
type Installer struct {
	client       *kube.Client
	fieldManager string
	forKind      func(*catalog.Kind) (*apiextensionsv1.CustomResourceDefinition, error)
	none         error
	// EstablishTimeout bounds the wait for Established; 0: DefaultEstablishTimeout.
	EstablishTimeout time.Duration
	// ConversionClient, when set, is where the API server calls the
	// conversion webhook of a CRD of several versions (engine/webhook,
	// served by this operator), with the CA bundle that verifies it: it
	// replaces the clientConfig of the CRD's spec.conversion. Called at
	// every Install, so that a rotated CA is injected by installing again.
	ConversionClient func() *apiextensionsv1.WebhookClientConfig
}

// New returns an Installer that applies through client, as its field
// manager, the CRD that forKind (engine/crd's ForKind) returns for a
// folder. A folder without one (forKind returns an error that is none, such
// as crd.ErrNoSchema, or a nil CRD) is left alone: its CRD is installed
// some other way. Every call goes through client's methods, so that its
// errors are marked as the engine's are.
//
//	crdinstall.New(client, crd.ForKind, crd.ErrNoSchema)
func New(client *kube.Client, forKind func(*catalog.Kind) (*apiextensionsv1.CustomResourceDefinition, error), none error) *Installer {
	return &Installer{client: client, fieldManager: client.FieldManager(), forKind: forKind, none: none}
}

// attempts bounds the get, check and apply rounds of one Install: a
// round starts again only when the CRD changed between its read and its
// apply (the apply's resourceVersion precondition failed; the API server
// itself writes a CRD's status just after a change).
const attempts = 3

// Install makes kind k's CRD the folder's and waits until it is
// Established. It refuses, without changing anything:
//   - a CRD in a group of Kubernetes or its SIG projects (a
//     *ReservedGroupError), whether the CRD or kind.yaml names it;
//   - a CRD that is not the folder's kind's (matches);
//   - a live CRD that this operator did not create (a *NotOwnedError, see
//     Owned), also one created by someone else while the operator created
//     it (see installOnce);
//   - a change that Check refuses (a *RefusedError naming what would
//     break).
//
// A folder without a CRD is logged and left alone.
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
	for _, g := range []struct{ where, group string }{{catalog.KindFile, k.GVK.Group}, {"the folder's CRD", next.Spec.Group}} {
		if reason := ReservedGroup(g.group); reason != "" {
			return &ReservedGroupError{CRD: next.Name, Where: g.where, Group: g.group, Reason: reason}
		}
	}
	if err := matches(next, k); err != nil {
		return err
	}
	i.setConversionClient(next)
	source := ""
	switch {
	case k.CRD == nil:
	case strings.HasPrefix(k.Dir, "configmap/"): // engine/controller's name of a ConfigMap folder
		source = "<the " + catalog.CRDFile + " key of " + k.Dir + ", saved to a file>"
	default:
		source = filepath.Join(k.Dir, catalog.CRDFile)
	}
	for attempt := 1; ; attempt++ {
		live, applied, err := i.installOnce(ctx, next, source)
		if errors.Is(err, errRaced) && attempt < attempts {
			log.V(1).Info("CRD changed while it was installed; reading it again", "crd", next.Name, "err", err)
			continue
		}
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
}

// setConversionClient points a CRD that converts with a webhook at
// ConversionClient's, a copy: the CRD may be the folder's own.
func (i *Installer) setConversionClient(c *apiextensionsv1.CustomResourceDefinition) {
	conv := c.Spec.Conversion
	if i.ConversionClient == nil || conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter {
		return
	}
	cc := i.ConversionClient()
	if cc == nil {
		return
	}
	conv = conv.DeepCopy()
	if conv.Webhook == nil {
		conv.Webhook = &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}
	}
	conv.Webhook.ClientConfig = cc.DeepCopy()
	c.Spec.Conversion = conv
}

// installOnce reads the live CRD, refuses it unless it is the operator's
// and the change is safe, and applies next: an update under the
// precondition that the CRD is still at the resourceVersion read, so that
// the ownership and Check hold for the CRD that is changed. It returns the
// CRD as read (nil: absent) and as applied.
//
// Server-side apply has no create-only precondition (a metadata.uid or
// resourceVersion in an apply of an absent object is refused or ignored),
// so a CRD that someone else creates between the read and a create-apply
// gets the apply merged in (when no value conflicts), and would then be
// Owned. The answer to a create tells: a CRD the operator created has no
// other manager of its own fields yet. When it has one, the apply is
// withdrawn (see withdraw) and the CRD refused.
func (i *Installer) installOnce(ctx context.Context, next *apiextensionsv1.CustomResourceDefinition, source string) (*apiextensionsv1.CustomResourceDefinition, *unstructured.Unstructured, error) {
	live, err := i.get(ctx, next.Name)
	if err != nil {
		return nil, nil, err
	}
	if live != nil {
		if !Owned(live, i.fieldManager) {
			return nil, nil, &NotOwnedError{CRD: live.Name, FieldManager: i.fieldManager, Managers: Managers(live), Source: source}
		}
		err := Check(live, next, func(version string) ([]unstructured.Unstructured, error) {
			return i.list(ctx, schema.GroupVersionResource{Group: live.Spec.Group, Version: version, Resource: live.Spec.Names.Plural})
		})
		if err != nil {
			return nil, nil, err
		}
	}
	applied, err := i.apply(ctx, next, live)
	if err != nil {
		return nil, nil, err
	}
	if live == nil {
		others := slices.DeleteFunc(managersOf(applied.GetManagedFields()), func(m string) bool { return m == i.fieldManager })
		if len(others) > 0 {
			refused := &NotOwnedError{CRD: next.Name, FieldManager: i.fieldManager, Managers: others, Source: source, CreatedMeanwhile: true}
			if err := i.withdraw(ctx, next.Name); err != nil {
				return nil, nil, fmt.Errorf("%w; and withdrawing the operator's apply failed: %w", refused, err)
			}
			return nil, nil, refused
		}
	}
	return live, applied, nil
}

// withdraw releases every field of the CRD that the operator's field
// manager set: an apply of an empty configuration removes the fields only
// it owns, keeps the fields another manager owns too, and drops its
// managedFields entry. What is left is the CRD as the others made it.
func (i *Installer) withdraw(ctx context.Context, name string) error {
	data, err := json.Marshal(map[string]any{
		"apiVersion": apiextensionsv1.SchemeGroupVersion.String(), "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
	})
	if err != nil {
		return err
	}
	_, err = i.client.PatchMapped(ctx, crdMapping, "", name, types.ApplyPatchType, data)
	return err
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
	u, err := i.client.Get(ctx, crdMapping, "", name)
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

// list lists every object at gvr, in every namespace, a page at a time.
// The mapping is the CRD's own (its group, a version it serves, its
// plural), taken as cluster-wide: a list without a namespace.
func (i *Installer) list(ctx context.Context, gvr schema.GroupVersionResource) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	m := &meta.RESTMapping{Resource: gvr, Scope: meta.RESTScopeRoot}
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := i.client.List(ctx, m, "", opts)
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// errRaced is an update whose precondition failed: the CRD changed since
// it was read.
var errRaced = errors.New("the CRD changed since it was read")

// apply applies c with server-side apply; over live, the CRD as read (nil:
// absent), under the precondition of live's resourceVersion. Not forced: a field of the CRD that another manager set to another value
// (kubectl, Helm, a GitOps tool) is a conflict to report, not a value to
// take over, so that two owners of one CRD never undo each other's changes
// in turn.
func (i *Installer) apply(ctx context.Context, c *apiextensionsv1.CustomResourceDefinition, live *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, fmt.Errorf("CRD %s: %w", c.Name, err)
	}
	delete(obj, "status")
	md := map[string]any{"name": c.Name}
	if live != nil {
		md["resourceVersion"] = live.ResourceVersion
	}
	if len(c.Labels) > 0 {
		md["labels"] = c.Labels
	}
	if len(c.Annotations) > 0 {
		md["annotations"] = c.Annotations
	}
	obj["metadata"] = md
	obj["apiVersion"] = apiextensionsv1.SchemeGroupVersion.String()
	obj["kind"] = "CustomResourceDefinition"
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("CRD %s: %w", c.Name, err)
	}
	u, err := i.client.PatchMapped(ctx, crdMapping, "", c.Name, types.ApplyPatchType, data)
	switch {
	case err == nil:
		return u, nil
	case live != nil && apierrors.IsConflict(err) && !fieldConflict(err):
		return nil, fmt.Errorf("apply CRD %s: changed since resourceVersion %s: %w", c.Name, live.ResourceVersion, errRaced)
	case apierrors.IsConflict(err):
		return nil, fmt.Errorf("apply CRD %s as field manager %s: %w (another manager owns these fields with other values: "+
			"leave the CRD to it and remove it from the folder, or hand the fields over with kubectl apply --server-side --force-conflicts --field-manager=%s)",
			c.Name, i.fieldManager, err, i.fieldManager)
	}
	return nil, fmt.Errorf("apply CRD %s: %w", c.Name, err)
}

// fieldConflict reports whether err is a server-side apply conflict, which
// lists a cause per field in conflict with another manager; a failed
// resourceVersion precondition is a conflict without causes.
func fieldConflict(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	return slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool {
		return c.Type == metav1.CauseTypeFieldManagerConflict
	})
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
