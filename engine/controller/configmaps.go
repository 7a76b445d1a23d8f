package controller

import (
	"context"
	"errors"
	"sort"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
)

// ConfigMapFolders are kind folders delivered as ConfigMaps: one ConfigMap
// per folder, its keys the folder's files, selected by a label in one
// namespace (the operator's own). They are watched, so that `kubectl apply`
// of a folder's ConfigMap starts, changes or stops a kind with no restart;
// each load is told with an Event on the ConfigMap.
type ConfigMapFolders struct {
	namespace string
	selector  string
	recorder  record.EventRecorder
	informer  cache.SharedIndexInformer
	changed   chan struct{}
}

// Reasons of the Events on a folder's ConfigMap.
const (
	ReasonKindStarted       = "KindStarted"
	ReasonKindFolderInvalid = "KindFolderInvalid"
	// ReasonKindConflict: another folder serves the kind already.
	ReasonKindConflict = "KindConflict"
	// ReasonIdentityRefused: the folder's ServiceAccount does not agree to
	// serve its kind (AnnotationServes).
	ReasonIdentityRefused = "IdentityRefused"
)

// configMapSource is the Kind.Dir of a ConfigMap's folder.
func configMapSource(namespace, name string) string {
	return "configmap/" + namespace + "/" + name
}

// NewConfigMapFolders watches the ConfigMaps of namespace that match the
// label selector; Start runs the watch.
//
// It takes the core group's client, not a kubernetes.Interface: the whole
// clientset behind an interface keeps every typed client of every group in
// the binary (text/template's reflection disables the linker's pruning of
// methods), which cost run 11 MiB of resident memory.
func NewConfigMapFolders(cs typedcorev1.ConfigMapsGetter, namespace, selector string, recorder record.EventRecorder) *ConfigMapFolders {
	if recorder == nil {
		recorder = &record.FakeRecorder{}
	}
	c := &ConfigMapFolders{namespace: namespace, selector: selector, recorder: recorder, changed: make(chan struct{}, 1)}
	cms := cs.ConfigMaps(namespace)
	c.informer = cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return cms.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return cms.Watch(ctx, o)
		},
	}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	notify := func() {
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
	_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { notify() },
		UpdateFunc: func(old, cur any) {
			o, n := old.(*corev1.ConfigMap), cur.(*corev1.ConfigMap)
			if o.ResourceVersion != n.ResourceVersion {
				notify()
			}
		},
		DeleteFunc: func(any) { notify() },
	})
	return c
}

// Start runs the watch until ctx is done and returns once the ConfigMaps
// are listed, so that the first Load sees them all.
func (c *ConfigMapFolders) Start(ctx context.Context) error {
	go c.informer.Run(ctx.Done())
	start := time.Now()
	for !waitSynced(ctx, c.informer.HasSynced) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		klog.FromContext(ctx).Info("Waiting to list the kind folders' ConfigMaps", "namespace", c.namespace,
			"selector", c.selector, "waited", time.Since(start).Round(time.Second).String())
	}
	return nil
}

// Changed implements changeNotifier.
func (c *ConfigMapFolders) Changed() <-chan struct{} { return c.changed }

// Load implements Folders: every selected ConfigMap, oldest first, so that
// when two new folders name the same kind the one that was there first
// wins, across restarts too (SyncFolders); a later ConfigMap cannot take a
// kind by choosing a name that sorts first.
func (c *ConfigMapFolders) Load() ([]*catalog.Kind, []*catalog.FolderError, error) {
	objs := c.informer.GetStore().List()
	sort.Slice(objs, func(i, j int) bool {
		a, b := objs[i].(*corev1.ConfigMap), objs[j].(*corev1.ConfigMap)
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	var kinds []*catalog.Kind
	var skipped []*catalog.FolderError
	for _, o := range objs {
		cm := o.(*corev1.ConfigMap)
		src := configMapSource(cm.Namespace, cm.Name)
		k, err := catalog.LoadKindFS(cm.Name, src, configMapFS(cm))
		if err != nil {
			skipped = append(skipped, &catalog.FolderError{Dir: src, Err: err})
			continue
		}
		kinds = append(kinds, k)
	}
	return kinds, skipped, nil
}

// configMapFS is a ConfigMap's keys as the files of a folder.
func configMapFS(cm *corev1.ConfigMap) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, data := range cm.Data {
		fsys[name] = &fstest.MapFile{Data: []byte(data), Mode: 0o444}
	}
	for name, data := range cm.BinaryData {
		fsys[name] = &fstest.MapFile{Data: data, Mode: 0o444}
	}
	return fsys
}

// Reported implements loadReporter: an Event on the folder's ConfigMap.
func (c *ConfigMapFolders) Reported(source string, gk schema.GroupKind, err error) {
	for _, o := range c.informer.GetStore().List() {
		cm := o.(*corev1.ConfigMap)
		if configMapSource(cm.Namespace, cm.Name) != source {
			continue
		}
		var conflict *KindConflictError
		var agreement *AgreementError
		switch {
		case err == nil:
			c.recorder.Eventf(cm, corev1.EventTypeNormal, ReasonKindStarted, "Serving kind %s", gk)
		case errors.As(err, &conflict):
			c.recorder.Eventf(cm, corev1.EventTypeWarning, ReasonKindConflict,
				"Kind folder %s refused: kind %s is already served by %s, which keeps serving it", source, conflict.Kind, conflict.ServedBy)
		case errors.As(err, &agreement):
			c.recorder.Eventf(cm, corev1.EventTypeWarning, ReasonIdentityRefused, "Kind folder refused: %v", err)
		case gk.Empty():
			c.recorder.Eventf(cm, corev1.EventTypeWarning, ReasonKindFolderInvalid, "Kind folder not loaded: %v", err)
		default:
			c.recorder.Eventf(cm, corev1.EventTypeWarning, ReasonKindFolderInvalid,
				"Kind folder not loaded; its last good version goes on serving %s: %v", gk, err)
		}
		return
	}
}

var (
	_ Folders      = (*ConfigMapFolders)(nil)
	_ loadReporter = (*ConfigMapFolders)(nil)
	_ Folders      = Dir("")
)
