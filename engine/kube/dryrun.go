package kube

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ApplyDryRun is ApplyMapped with dryRun=All: the API server runs the whole
// request (defaulting, admission, validation, the field managers' merge,
// RBAC, which asks for patch, or create for an absent object) and returns
// the object as it would store it, storing nothing. It is `operator
// plan`'s one request per changed child (engine/plan). The response is
// decoded whole: the plan compares it with the live object field by field.
//
// Kubernetes counts it in apiserver_request_total with dry_run="All", apart
// from the writes.
func (c *Client) ApplyDryRun(ctx context.Context, m *meta.RESTMapping, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ns := obj.GetNamespace()
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	opts := c.applyOptions()
	opts.DryRun = []string{metav1.DryRunAll}
	if ns == "" {
		return marked(c.dynamic.Resource(m.Resource).Apply(ctx, obj.GetName(), obj, opts))
	}
	return marked(c.dynamic.Resource(m.Resource).Namespace(ns).Apply(ctx, obj.GetName(), obj, opts))
}
