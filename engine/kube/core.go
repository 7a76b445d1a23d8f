package kube

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// The core group's calls of the engine: the operator's own records in its
// state namespace (the inventory's ConfigMap), the kinds' ServiceAccounts
// (agreement), and the Events' sink. Through the core group's typed client
// only, never a kubernetes.Interface: the whole clientset behind an
// interface keeps every typed client of every group in the binary
// (text/template's reflection disables the linker's pruning of methods),
// which cost run 11 MiB of resident memory (test/author's
// TestBinaryLinksNoUnusedClients).

// errNoCore: a Client of fakes made without a core group.
var errNoCore = errors.New("no core group client (a Client of fakes made without one)")

// GetConfigMap reads ConfigMap ns/name live.
func (c *Client) GetConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if c.core == nil {
		return nil, errNoCore
	}
	return marked(c.core.ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}))
}

// PatchConfigMap patches ConfigMap ns/name with a patch of type pt, as the
// field manager.
func (c *Client) PatchConfigMap(ctx context.Context, ns, name string, pt types.PatchType, data []byte) (*corev1.ConfigMap, error) {
	if c.core == nil {
		return nil, errNoCore
	}
	return marked(c.core.ConfigMaps(ns).Patch(ctx, name, pt, data, metav1.PatchOptions{FieldManager: c.fieldManager}))
}

// CreateConfigMap creates cm in ns, as the field manager.
func (c *Client) CreateConfigMap(ctx context.Context, ns string, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	if c.core == nil {
		return nil, errNoCore
	}
	return marked(c.core.ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: c.fieldManager}))
}

// GetServiceAccount reads ServiceAccount ns/name live.
func (c *Client) GetServiceAccount(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if c.core == nil {
		return nil, errNoCore
	}
	return marked(c.core.ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{}))
}

// ListServiceAccounts lists the ServiceAccounts of ns live.
func (c *Client) ListServiceAccounts(ctx context.Context, ns string) (*corev1.ServiceAccountList, error) {
	if c.core == nil {
		return nil, errNoCore
	}
	return marked(c.core.ServiceAccounts(ns).List(ctx, metav1.ListOptions{}))
}

// EventSink is where client-go's Event broadcaster (tools/record) writes
// the Events of every namespace: a side door (see the package doc). Its
// errors are the API server's, unmarked, on purpose: the broadcaster makes
// the calls and decides by the error's type whether to try again
// (record's recordEvent: a *StatusError is dropped, anything else is
// retried up to 12 times, 10 s apart), so a Forbidden wrapped in a mark
// would be retried as a network failure; and no reconcile reads them.
func (c *Client) EventSink() record.EventSink {
	return &typedcorev1.EventSinkImpl{Interface: c.core.Events(metav1.NamespaceAll)}
}
