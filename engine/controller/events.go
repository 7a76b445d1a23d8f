package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// NewEventRecorder returns a recorder that writes Events as component, and
// the function that flushes and stops it. Custom resources need no scheme
// registration: their references come from their own apiVersion and kind.
func NewEventRecorder(ctx context.Context, cfg *rest.Config, component string) (record.EventRecorder, func(), error) {
	cs, err := typedcorev1.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("events client: %w", err)
	}
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartStructuredLogging(4)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.Events("")})
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}), b.Shutdown, nil
}
