package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/tmplop/operator/engine/kube"
)

// NewEventRecorder returns a recorder that writes Events as component
// through a client of cfg (see NewEventRecorderForClient).
func NewEventRecorder(ctx context.Context, cfg *rest.Config, component string) (record.EventRecorder, func(), error) {
	client, err := kube.New(cfg, component)
	if err != nil {
		return nil, nil, err
	}
	rec, stop := NewEventRecorderForClient(ctx, client, component)
	return rec, stop, nil
}

// NewEventRecorderForClient returns a recorder that writes Events as
// component through client's Event sink (a side door of kube.Client: the
// broadcaster makes the calls and judges their errors itself), and the
// function that flushes and stops it.
// Custom resources need no scheme registration: their references come
// from their own apiVersion and kind.
func NewEventRecorderForClient(ctx context.Context, client *kube.Client, component string) (record.EventRecorder, func()) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartStructuredLogging(4)
	b.StartRecordingToSink(client.EventSink())
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}), b.Shutdown
}
