// Package revisiontest serves kube.RevisionAPI over the apps group's typed
// client, for unit tests on k8s.io/client-go/kubernetes/fake (whose
// reactors inject conflicts and refusals). The operator's binary reaches
// ControllerRevisions through its dynamic client instead, so as not to
// link the typed apps client.
package revisiontest

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
)

// Typed is kube.RevisionAPI over a typed client.
type Typed struct {
	Getter typedappsv1.ControllerRevisionsGetter
}

func (t Typed) List(ctx context.Context, ns string, opts metav1.ListOptions) (*appsv1.ControllerRevisionList, error) {
	return t.Getter.ControllerRevisions(ns).List(ctx, opts)
}

func (t Typed) Create(ctx context.Context, r *appsv1.ControllerRevision, opts metav1.CreateOptions) (*appsv1.ControllerRevision, error) {
	return t.Getter.ControllerRevisions(r.Namespace).Create(ctx, r, opts)
}

func (t Typed) Update(ctx context.Context, r *appsv1.ControllerRevision, opts metav1.UpdateOptions) (*appsv1.ControllerRevision, error) {
	return t.Getter.ControllerRevisions(r.Namespace).Update(ctx, r, opts)
}

func (t Typed) Delete(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
	return t.Getter.ControllerRevisions(ns).Delete(ctx, name, opts)
}
