package kube

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// The kinds' revision records in the operator's state namespace
// (engine/revision): apps/v1 ControllerRevisions, the objects Kubernetes
// keeps DaemonSet and StatefulSet revisions in. Through the dynamic
// client, not the apps group's typed one: that one links every apply
// configuration of the group into the binary (TestBinaryLinksNoUnusedClients)
// for one resource. Errors marked as every other call's. Updates carry the object's resourceVersion and deletes a
// precondition on it: two replicas numbering records at once agree by
// the Conflict the API server answers the one that read a stale list.

// errNoRevisions: a Client of fakes made without a ControllerRevisions client.
var errNoRevisions = errors.New("no ControllerRevisions client (a Client of fakes made without one)")

// ListControllerRevisions lists the ControllerRevisions of ns that match
// the label selector.
func (c *Client) ListControllerRevisions(ctx context.Context, ns, selector string) ([]appsv1.ControllerRevision, error) {
	if c.revisions == nil {
		return nil, errNoRevisions
	}
	l, err := marked(c.revisions.List(ctx, ns, metav1.ListOptions{LabelSelector: selector}))
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// CreateControllerRevision creates r in its namespace, as the field manager.
func (c *Client) CreateControllerRevision(ctx context.Context, r *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if c.revisions == nil {
		return nil, errNoRevisions
	}
	return marked(c.revisions.Create(ctx, r, metav1.CreateOptions{FieldManager: c.fieldManager}))
}

// UpdateControllerRevision replaces r, as the field manager, under the
// precondition of r's resourceVersion (a Conflict when it changed since).
func (c *Client) UpdateControllerRevision(ctx context.Context, r *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if c.revisions == nil {
		return nil, errNoRevisions
	}
	return marked(c.revisions.Update(ctx, r, metav1.UpdateOptions{FieldManager: c.fieldManager}))
}

// DeleteControllerRevision deletes ns/name if it is still the object uid
// at resourceVersion: a record renumbered since it was listed is kept.
func (c *Client) DeleteControllerRevision(ctx context.Context, ns, name string, uid types.UID, resourceVersion string) error {
	if c.revisions == nil {
		return errNoRevisions
	}
	_, err := marked(struct{}{}, c.revisions.Delete(ctx, ns, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &resourceVersion}}))
	return err
}

// RevisionAPI is the ControllerRevision calls of a Client: over its
// dynamic client in a process (dynamicRevisions), over a typed fake in
// unit tests (internal/testsupport/revisiontest).
type RevisionAPI interface {
	List(ctx context.Context, ns string, opts metav1.ListOptions) (*appsv1.ControllerRevisionList, error)
	Create(ctx context.Context, r *appsv1.ControllerRevision, opts metav1.CreateOptions) (*appsv1.ControllerRevision, error)
	Update(ctx context.Context, r *appsv1.ControllerRevision, opts metav1.UpdateOptions) (*appsv1.ControllerRevision, error)
	Delete(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error
}

var controllerRevisions = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "controllerrevisions"}

// dynamicRevisions is RevisionAPI over a dynamic client.
type dynamicRevisions struct{ d dynamic.Interface }

func (r dynamicRevisions) List(ctx context.Context, ns string, opts metav1.ListOptions) (*appsv1.ControllerRevisionList, error) {
	l, err := r.d.Resource(controllerRevisions).Namespace(ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &appsv1.ControllerRevisionList{ListMeta: metav1.ListMeta{ResourceVersion: l.GetResourceVersion(), Continue: l.GetContinue()},
		Items: make([]appsv1.ControllerRevision, len(l.Items))}
	for i := range l.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(l.Items[i].Object, &out.Items[i]); err != nil {
			return nil, fmt.Errorf("decode ControllerRevision %s/%s: %w", ns, l.Items[i].GetName(), err)
		}
	}
	return out, nil
}

func (r dynamicRevisions) Create(ctx context.Context, rev *appsv1.ControllerRevision, opts metav1.CreateOptions) (*appsv1.ControllerRevision, error) {
	u, err := toUnstructured(rev)
	if err != nil {
		return nil, err
	}
	return fromUnstructured(r.d.Resource(controllerRevisions).Namespace(rev.Namespace).Create(ctx, u, opts))
}

func (r dynamicRevisions) Update(ctx context.Context, rev *appsv1.ControllerRevision, opts metav1.UpdateOptions) (*appsv1.ControllerRevision, error) {
	u, err := toUnstructured(rev)
	if err != nil {
		return nil, err
	}
	return fromUnstructured(r.d.Resource(controllerRevisions).Namespace(rev.Namespace).Update(ctx, u, opts))
}

func (r dynamicRevisions) Delete(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
	return r.d.Resource(controllerRevisions).Namespace(ns).Delete(ctx, name, opts)
}

func toUnstructured(rev *appsv1.ControllerRevision) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rev)
	if err != nil {
		return nil, fmt.Errorf("encode ControllerRevision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("apps/v1")
	u.SetKind("ControllerRevision")
	return u, nil
}

func fromUnstructured(u *unstructured.Unstructured, err error) (*appsv1.ControllerRevision, error) {
	if err != nil {
		return nil, err
	}
	out := &appsv1.ControllerRevision{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("decode ControllerRevision %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return out, nil
}
