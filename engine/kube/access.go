package kube

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Access is one request, as the API server's authorizer is asked about it:
// a verb on a resource in a namespace ("" for all namespaces, or a
// cluster-scoped resource).
type Access struct {
	Verb      string
	Resource  schema.GroupResource
	Namespace string
}

func (a Access) String() string {
	where := "cluster-wide"
	if a.Namespace != "" {
		where = "in namespace " + a.Namespace
	}
	group := a.Resource.Group
	if group == "" {
		group = `""`
	}
	return fmt.Sprintf("%s %s (API group %s) %s", a.Verb, a.Resource.Resource, group, where)
}

// Allowed asks the API server whether the client's identity (the account
// it impersonates, or the operator's own) may make the request a, with a
// SelfSubjectAccessReview: every authenticated user may create one (the
// built-in ClusterRole system:basic-user), so the question needs no right
// of its own and is answered for exactly the identity the calls will
// carry. reason is the authorizer's, when it gives one. A Client of fakes
// made without an Authorization client answers yes: it has no authorizer.
func (c *Client) Allowed(ctx context.Context, a Access) (allowed bool, reason string, err error) {
	if c.authorization == nil {
		return true, "", nil
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.Verb, Group: a.Resource.Group, Resource: a.Resource.Resource, Namespace: a.Namespace,
		},
	}}
	out, err := marked(c.authorization.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{}))
	if err != nil {
		return false, "", fmt.Errorf("ask whether %s may %s: %w", c.who(), a, err)
	}
	return out.Status.Allowed && !out.Status.Denied, out.Status.Reason, nil
}

// who names the client's identity in messages.
func (c *Client) who() string {
	if c.identity == "" {
		return "the operator"
	}
	return c.identity
}
