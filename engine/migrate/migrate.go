package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/kube"
)

// Annotation keeps a migration's progress on its CRD: where a migration
// stopped by a restart goes on.
const Annotation = "operator.tmplop.io/storage-migration"

// ConditionType is the CRD's condition of its objects' storage: True when
// every object is at the storage version and storedVersions says so.
const ConditionType = "StorageMigrated"

// Reasons of the condition and the Events.
const (
	ReasonMigrating = "Migrating"
	ReasonMigrated  = "Migrated"
	ReasonFailed    = "MigrationFailed"
)

// page is the size of a list; progressEvery how often the progress is
// written to the CRD.
const (
	page          = 500
	progressEvery = 100
)

// DefaultRate paces the writes: about what kube-storage-version-migrator's
// default is, a small share of an API server's write capacity.
const DefaultRate = 50

// crdMapping is the CRD API's, named here: no discovery is asked.
var crdMapping = &meta.RESTMapping{
	Resource:         apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"),
	GroupVersionKind: apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
	Scope:            meta.RESTScopeRoot,
}

// Observer is told what a migration did; engine/metrics implements it.
type Observer interface {
	// ObserveMigrated: n more objects of crd were written back.
	ObserveMigrated(crd string, n int)
	// ObserveRun: a migration of crd ended with result (ReasonMigrated or
	// ReasonFailed).
	ObserveRun(crd, result string)
}

// Migrator migrates the stored objects of CRDs.
type Migrator struct {
	client   *kube.Client
	recorder record.EventRecorder
	limiter  *rate.Limiter
	observer Observer
}

// New returns a Migrator that writes through client, at most perSecond
// objects a second (0: DefaultRate), telling recorder (Events on the CRD)
// and observer (nil: none).
func New(client *kube.Client, recorder record.EventRecorder, perSecond float64, observer Observer) *Migrator {
	if perSecond <= 0 {
		perSecond = DefaultRate
	}
	return &Migrator{client: client, recorder: recorder, limiter: rate.NewLimiter(rate.Limit(perSecond), 1), observer: observer}
}

// progress is the value of Annotation.
type progress struct {
	To   string `json:"to"`             // the storage version migrated to
	Last string `json:"last,omitempty"` // namespace/name of the last object written
	Done int    `json:"done"`           // objects written so far
}

// Result is what a Migrate did.
type Result struct {
	// Needed: storedVersions listed more than the storage version.
	Needed bool
	// Written: objects written back by this run (not those of an earlier
	// run it resumed).
	Written int
	// Skipped: objects written or deleted by someone else since the list.
	Skipped int
}

// Migrate moves every object of the CRD named crdName to its storage
// version and prunes status.storedVersions (see the package doc). It is
// safe to call again at any time: a CRD whose objects are migrated costs
// one GET.
func (m *Migrator) Migrate(ctx context.Context, crdName string) (Result, error) {
	var res Result
	crd, raw, err := m.getCRD(ctx, crdName)
	if err != nil {
		return res, err
	}
	storage := storageVersion(crd)
	if storage == "" {
		return res, fmt.Errorf("CRD %s has no storage version", crdName)
	}
	if slices.Equal(crd.Status.StoredVersions, []string{storage}) {
		return res, nil
	}
	res.Needed = true
	log := klog.FromContext(ctx).WithValues("crd", crdName, "storageVersion", storage, "storedVersions", crd.Status.StoredVersions)
	prog := progress{To: storage}
	if v, ok := crd.Annotations[Annotation]; ok {
		var p progress
		if json.Unmarshal([]byte(v), &p) == nil && p.To == storage {
			prog = p // resume
		}
	}
	log.Info("Migrating the stored objects to the storage version", "resumeAfter", prog.Last, "done", prog.Done)
	m.recorder.Eventf(raw, "Normal", ReasonMigrating, "Writing every %s back at storage version %s (stored versions %s)%s",
		crd.Spec.Names.Kind, storage, strings.Join(crd.Status.StoredVersions, ", "), resumed(prog))
	if err := m.setCondition(ctx, crdName, metav1.ConditionFalse, ReasonMigrating,
		fmt.Sprintf("writing the objects back at %s: %d done", storage, prog.Done), nil); err != nil {
		return res, err
	}

	om := objectMapping(crd, storage)
	err = m.writeBack(ctx, crdName, om, &prog, &res)
	if err != nil {
		if ctx.Err() != nil {
			return res, err
		}
		msg := fmt.Sprintf("stopped after %d objects: %v", prog.Done, err)
		m.recorder.Event(raw, "Warning", ReasonFailed, msg)
		m.observe(func(o Observer) { o.ObserveRun(crdName, ReasonFailed) })
		if cerr := m.setCondition(ctx, crdName, metav1.ConditionFalse, ReasonFailed, msg, nil); cerr != nil {
			log.Error(cerr, "Cannot write the migration's condition")
		}
		return res, fmt.Errorf("migrate %s to %s: %w", crdName, storage, err)
	}
	if err := m.setCondition(ctx, crdName, metav1.ConditionTrue, ReasonMigrated,
		fmt.Sprintf("every object is stored at %s", storage), []string{storage}); err != nil {
		return res, err
	}
	if err := m.patchProgress(ctx, crdName, nil); err != nil {
		log.Error(err, "Cannot remove the migration's progress annotation")
	}
	m.recorder.Eventf(raw, "Normal", ReasonMigrated, "Every %s is stored at %s (%d written by this run, %d written by others); storedVersions is [%s]",
		crd.Spec.Names.Kind, storage, res.Written, res.Skipped, storage)
	m.observe(func(o Observer) { o.ObserveRun(crdName, ReasonMigrated) })
	log.Info("Stored objects migrated", "written", res.Written, "skipped", res.Skipped)
	return res, nil
}

func resumed(p progress) string {
	if p.Last == "" {
		return ""
	}
	return fmt.Sprintf(", going on after %s (%d done)", p.Last, p.Done)
}

// writeBack lists the objects and writes back those after prog.Last.
func (m *Migrator) writeBack(ctx context.Context, crdName string, om *meta.RESTMapping, prog *progress, res *Result) error {
	opts := metav1.ListOptions{Limit: page}
	sinceSaved := 0
	for {
		list, err := m.client.List(ctx, om, "", opts)
		if err != nil {
			return fmt.Errorf("list %s: %w", om.Resource.Resource, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			key := obj.GetNamespace() + "/" + obj.GetName()
			if prog.Last != "" && key <= prog.Last {
				continue
			}
			if err := m.limiter.Wait(ctx); err != nil {
				return err
			}
			switch _, err := m.client.Update(ctx, om, obj); {
			case err == nil:
				res.Written++
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
				// Written or deleted since the list: stored at the new
				// version already, or gone.
				res.Skipped++
			default:
				return fmt.Errorf("write back %s: %w", key, err)
			}
			prog.Last, prog.Done = key, prog.Done+1
			m.observe(func(o Observer) { o.ObserveMigrated(crdName, 1) })
			if sinceSaved++; sinceSaved >= progressEvery {
				sinceSaved = 0
				if err := m.patchProgress(ctx, crdName, prog); err != nil {
					return err
				}
			}
		}
		if list.GetContinue() == "" {
			return nil
		}
		opts.Continue = list.GetContinue()
	}
}

func (m *Migrator) observe(f func(Observer)) {
	if m.observer != nil {
		f(m.observer)
	}
}

// getCRD reads the CRD, typed and as the object Events are recorded on.
func (m *Migrator) getCRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, *unstructured.Unstructured, error) {
	u, err := m.client.Get(ctx, crdMapping, "", name)
	if err != nil {
		return nil, nil, fmt.Errorf("read CRD %s: %w", name, err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
		return nil, nil, fmt.Errorf("decode CRD %s: %w", name, err)
	}
	return &crd, u, nil
}

// patchProgress writes prog into the CRD's annotation; nil removes it.
func (m *Migrator) patchProgress(ctx context.Context, crdName string, prog *progress) error {
	var value any // JSON null removes the annotation
	if prog != nil {
		b, err := json.Marshal(prog)
		if err != nil {
			return err
		}
		value = string(b)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{Annotation: value}}})
	if err != nil {
		return err
	}
	if _, err := m.client.PatchMapped(ctx, crdMapping, "", crdName, types.MergePatchType, patch); err != nil {
		return fmt.Errorf("record the migration's progress on CRD %s: %w", crdName, err)
	}
	return nil
}

// conflictRetries bounds the rounds of a status write that the API
// server's own controllers, which write the CRD's status too, race.
const conflictRetries = 5

// setCondition writes the StorageMigrated condition into the CRD's status,
// and storedVersions when stored is not nil, under the resourceVersion
// read: the apiextensions controllers write the same status (their own
// conditions, kept as read), and storedVersions must not lose a version
// the API server added since.
func (m *Migrator) setCondition(ctx context.Context, crdName string, status metav1.ConditionStatus, reason, message string, stored []string) error {
	for attempt := 1; ; attempt++ {
		crd, _, err := m.getCRD(ctx, crdName)
		if err != nil {
			return err
		}
		if stored != nil && storageVersion(crd) != stored[0] {
			return fmt.Errorf("CRD %s: the storage version changed to %s during the migration to %s", crdName, storageVersion(crd), stored[0])
		}
		setCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: ConditionType, Status: apiextensionsv1.ConditionStatus(status), Reason: reason, Message: message,
		})
		if stored != nil {
			crd.Status.StoredVersions = stored
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			return err
		}
		obj := &unstructured.Unstructured{Object: u}
		obj.SetAPIVersion(apiextensionsv1.SchemeGroupVersion.String())
		obj.SetKind("CustomResourceDefinition")
		_, err = m.client.UpdateStatus(ctx, crdMapping, obj)
		if apierrors.IsConflict(err) && attempt < conflictRetries {
			continue
		}
		if err != nil {
			return fmt.Errorf("write the status of CRD %s: %w", crdName, err)
		}
		return nil
	}
}

// setCRDCondition sets c among crd's conditions, its transition time moved
// only when its status changes (as apiextensions' helpers do).
func setCRDCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionCondition) {
	now := metav1.NewTime(time.Now())
	for i, old := range crd.Status.Conditions {
		if old.Type != c.Type {
			continue
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status {
			c.LastTransitionTime = now
		}
		crd.Status.Conditions[i] = c
		return
	}
	c.LastTransitionTime = now
	crd.Status.Conditions = append(crd.Status.Conditions, c)
}

// storageVersion is the name of crd's version with storage: true.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// objectMapping is the mapping of crd's objects at version, made from the
// CRD itself: no discovery is asked.
func objectMapping(crd *apiextensionsv1.CustomResourceDefinition, version string) *meta.RESTMapping {
	scope := meta.RESTScopeNamespace
	if crd.Spec.Scope == apiextensionsv1.ClusterScoped {
		scope = meta.RESTScopeRoot
	}
	gv := schema.GroupVersion{Group: crd.Spec.Group, Version: version}
	return &meta.RESTMapping{
		Resource:         gv.WithResource(crd.Spec.Names.Plural),
		GroupVersionKind: gv.WithKind(crd.Spec.Names.Kind),
		Scope:            scope,
	}
}
