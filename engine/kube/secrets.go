package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// The operator's Secrets in its state namespace: the conversion webhook's
// certificate chain (engine/webhook), which every replica reads and
// watches and any replica renews. Through the core group's typed client,
// as the inventory's ConfigMap (core.go); errors marked as every other
// call's (an operator without the rights to its Secret is told as a
// Forbidden, not retried as a network failure). Updates carry the object's
// resourceVersion: the API server refuses one made on a stale read with a
// Conflict, which is how two replicas renewing at once agree.

// GetSecret reads Secret ns/name live.
func (c *Client) GetSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	if c.core == nil {
		return nil, errNoCore
	}
	return marked(c.core.Secrets(ns).Get(ctx, name, metav1.GetOptions{}))
}

// CreateSecret creates s in ns, as the field manager.
func (c *Client) CreateSecret(ctx context.Context, ns string, s *corev1.Secret) (*corev1.Secret, error) {
	if c.core == nil {
		return nil, errNoCore
	}
	return marked(c.core.Secrets(ns).Create(ctx, s, metav1.CreateOptions{FieldManager: c.fieldManager}))
}

// UpdateSecret replaces s in ns, as the field manager, under the
// precondition of s's resourceVersion (a Conflict when it changed since).
func (c *Client) UpdateSecret(ctx context.Context, ns string, s *corev1.Secret) (*corev1.Secret, error) {
	if c.core == nil {
		return nil, errNoCore
	}
	return marked(c.core.Secrets(ns).Update(ctx, s, metav1.UpdateOptions{FieldManager: c.fieldManager}))
}

// SecretListWatch is an informer's list and watch of the one Secret
// ns/name (a field selector on its name: RBAC may then grant list and
// watch on that name only).
func (c *Client) SecretListWatch(ns, name string) cache.ListerWatcher {
	selector := fields.OneTermEqualSelector(metav1.ObjectNameField, name).String()
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if c.core == nil {
				return nil, errNoCore
			}
			o.FieldSelector = selector
			l, err := marked(c.core.Secrets(ns).List(ctx, o))
			if err != nil {
				return nil, err // not a typed nil in an interface
			}
			return l, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if c.core == nil {
				return nil, errNoCore
			}
			o.FieldSelector = selector
			return marked(c.core.Secrets(ns).Watch(ctx, o))
		},
	}, c.core) // a fake core client says it cannot stream a list
}
