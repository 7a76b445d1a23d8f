package kube

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kinds' revision records in the operator's state namespace
// (engine/revision): apps/v1 ControllerRevisions, the objects Kubernetes
// keeps DaemonSet and StatefulSet revisions in. Through the apps group's
// typed client, for this one resource; errors marked as every other
// call's. Updates carry the object's resourceVersion and deletes a
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
	l, err := marked(c.revisions.ControllerRevisions(ns).List(ctx, metav1.ListOptions{LabelSelector: selector}))
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
	return marked(c.revisions.ControllerRevisions(r.Namespace).Create(ctx, r, metav1.CreateOptions{FieldManager: c.fieldManager}))
}

// UpdateControllerRevision replaces r, as the field manager, under the
// precondition of r's resourceVersion (a Conflict when it changed since).
func (c *Client) UpdateControllerRevision(ctx context.Context, r *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if c.revisions == nil {
		return nil, errNoRevisions
	}
	return marked(c.revisions.ControllerRevisions(r.Namespace).Update(ctx, r, metav1.UpdateOptions{FieldManager: c.fieldManager}))
}

// DeleteControllerRevision deletes ns/name if it is still the object uid
// at resourceVersion: a record renumbered since it was listed is kept.
func (c *Client) DeleteControllerRevision(ctx context.Context, ns, name string, uid types.UID, resourceVersion string) error {
	if c.revisions == nil {
		return errNoRevisions
	}
	_, err := marked(struct{}{}, c.revisions.ControllerRevisions(ns).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &resourceVersion}}))
	return err
}
