package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/cached"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/layout"
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
	set       *watchSet
	client    *kube.Client
	changed   chan struct{}

	mu    sync.Mutex
	watch *watchHandle // from Start until its context ends

	// compiled are the folders as last loaded, by source: a ConfigMap is
	// compiled again only when its resourceVersion changed, so that a
	// reload or a resync costs nothing for the folders that did not.
	loadMu   sync.Mutex
	compiled map[string]*compiledFolder
}

// compiledFolder is a ConfigMap's folder at one resourceVersion: its
// kind.yaml, and once compiled its Kind or why it failed.
type compiledFolder struct {
	uid, resourceVersion string
	spec                 *catalog.Spec // nil when kind.yaml failed (err)
	compiled             bool
	kind                 *catalog.Kind
	err                  error
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
	// ReasonKindForbidden: the kind's ServiceAccount may not list and
	// watch the kind (AccessError); the kind is not served.
	ReasonKindForbidden = "KindForbidden"
)

// configMapSource is the Kind.Dir of a ConfigMap's folder.
func configMapSource(namespace, name string) string {
	return "configmap/" + namespace + "/" + name
}

var configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

// NewConfigMapFolders watches the ConfigMaps of namespace that match the
// label selector, in m's watch set, as the operator; Start runs the watch.
// They are watched as cached objects through kube.Client, which holds the
// core group's typed client only, never the whole clientset: that keeps
// every typed client of every group in the binary (see engine/kube/core.go).
func NewConfigMapFolders(m *Manager, namespace, selector string, recorder record.EventRecorder) *ConfigMapFolders {
	if recorder == nil {
		recorder = &record.FakeRecorder{}
	}
	return &ConfigMapFolders{namespace: namespace, selector: selector, recorder: recorder, set: m.watches, client: m.base,
		changed: make(chan struct{}, 1)}
}

// Start runs the watch until ctx is done and returns once the ConfigMaps
// are listed, so that the first Load sees them all.
func (c *ConfigMapFolders) Start(ctx context.Context) error {
	notify := func(any, bool) {
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
	w := c.set.acquire(c.client, watchKey{gvr: configMapsGVR, namespace: c.namespace, selector: c.selector}, nil, handler(notify))
	c.mu.Lock()
	c.watch = w
	c.mu.Unlock()
	go func() {
		<-ctx.Done()
		w.release()
	}()
	start := time.Now()
	for !waitSynced(ctx, w.hasSynced) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		klog.FromContext(ctx).Info("Waiting to list the kind folders' ConfigMaps", "namespace", c.namespace,
			"selector", c.selector, "waited", time.Since(start).Round(time.Second).String())
	}
	return nil
}

// cached are the watched ConfigMaps as the watch holds them.
func (c *ConfigMapFolders) cached() []any {
	c.mu.Lock()
	w := c.watch
	c.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.informer().GetStore().List()
}

// configMaps are the watched ConfigMaps, decoded; a ConfigMap that does
// not decode is left out.
func (c *ConfigMapFolders) configMaps(log klog.Logger) []*corev1.ConfigMap {
	objs := c.cached()
	out := make([]*corev1.ConfigMap, 0, len(objs))
	for _, o := range objs {
		cm, err := configMapOf(o)
		if err != nil {
			log.Error(err, "Kind folder's ConfigMap not read")
			continue
		}
		out = append(out, cm)
	}
	return out
}

// configMapOf is the ConfigMap the watch cached, decoded.
func configMapOf(o any) (*corev1.ConfigMap, error) {
	c, ok := o.(*cached.Object)
	if !ok {
		return nil, fmt.Errorf("%T in the ConfigMaps' cache", o)
	}
	u, err := c.Object()
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cm); err != nil {
		return nil, fmt.Errorf("decode ConfigMap %s/%s: %w", c.Namespace, c.Name, err)
	}
	return cm, nil
}

// Changed implements changeNotifier.
func (c *ConfigMapFolders) Changed() <-chan struct{} { return c.changed }

// Load implements Folders: every selected ConfigMap, oldest first, so that
// when two new folders name the same kind the one that was there first
// wins, across restarts too (SyncFolders); a later ConfigMap cannot take a
// kind by choosing a name that sorts first.
//
// A folder is compiled within l.Limits, once per resourceVersion of its
// ConfigMap, and only once l.Admit agrees with its kind.yaml: a folder
// whose ServiceAccount does not agree to serve its kind is refused before
// anything of it is unpacked or parsed.
func (c *ConfigMapFolders) Load(l Loading) ([]*catalog.Kind, []*catalog.FolderError, error) {
	cms := c.configMaps(klog.Background())
	sort.Slice(cms, func(i, j int) bool {
		a, b := cms[i], cms[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	if c.compiled == nil {
		c.compiled = map[string]*compiledFolder{}
	}
	present := make(map[string]bool, len(cms))
	var kinds []*catalog.Kind
	var skipped []*catalog.FolderError
	for _, cm := range cms {
		src := configMapSource(cm.Namespace, cm.Name)
		present[src] = true
		k, err := c.load(l, src, cm)
		if err != nil {
			skipped = append(skipped, &catalog.FolderError{Dir: src, Err: err})
			continue
		}
		kinds = append(kinds, k)
	}
	for src := range c.compiled {
		if !present[src] {
			delete(c.compiled, src)
		}
	}
	return kinds, skipped, nil
}

// load is the folder of cm (source src): compiled at this
// resourceVersion already, or now if l.Admit agrees.
func (c *ConfigMapFolders) load(l Loading, src string, cm *corev1.ConfigMap) (*catalog.Kind, error) {
	f := c.compiled[src]
	if f == nil || f.uid != string(cm.UID) || f.resourceVersion != cm.ResourceVersion {
		f = &compiledFolder{uid: string(cm.UID), resourceVersion: cm.ResourceVersion}
		f.spec, f.err = catalog.ReadSpec(configMapFiles(cm))
		c.compiled[src] = f
	}
	if f.spec == nil {
		return nil, f.err
	}
	// Asked at every load, compiled or not: an account's agreement
	// changes without its folder.
	if l.Admit != nil {
		if err := l.Admit(f.spec); err != nil {
			return nil, err
		}
	}
	if !f.compiled {
		f.kind, f.err = l.Limits.Compile(cm.Name, src, configMapFiles(cm))
		f.compiled = true
	}
	return f.kind, f.err
}

// Reported implements loadReporter: an Event on the folder's ConfigMap.
func (c *ConfigMapFolders) Reported(source string, gk schema.GroupKind, err error) {
	for _, o := range c.cached() {
		if m, ok := o.(*cached.Object); !ok || configMapSource(m.Namespace, m.Name) != source {
			continue
		}
		cm, decodeErr := configMapOf(o)
		if decodeErr != nil {
			return
		}
		var conflict *KindConflictError
		var agreement *AgreementError
		var access *AccessError
		switch {
		case err == nil:
			c.recorder.Eventf(cm, corev1.EventTypeNormal, ReasonKindStarted, "Serving kind %s", gk)
		case errors.As(err, &conflict):
			c.recorder.Eventf(cm, corev1.EventTypeWarning, ReasonKindConflict,
				"Kind folder %s refused: kind %s is already served by %s, which keeps serving it", source, conflict.Kind, conflict.ServedBy)
		case errors.As(err, &agreement):
			c.recorder.Eventf(cm, corev1.EventTypeWarning, ReasonIdentityRefused, "Kind folder refused: %v", err)
		case errors.As(err, &access):
			c.recorder.Eventf(cm, corev1.EventTypeWarning, ReasonKindForbidden, "Kind folder refused, nothing of it runs: %v", err)
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

// configMapFiles are cm's keys, Data and BinaryData, as the files of a
// folder: a key cannot hold a slash, so a ConfigMap is a flat folder.
func configMapFiles(cm *corev1.ConfigMap) layout.Files {
	m := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for name, data := range cm.Data {
		m[name] = []byte(data)
	}
	for name, data := range cm.BinaryData {
		m[name] = data
	}
	return layout.FromMap(m)
}
