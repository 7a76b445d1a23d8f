package reconcile

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/status"
)

// Whether the kind's CRD keeps status.observedRevision, as the first
// status write that sent it showed (revisionKept).
const (
	revisionUnknown int32 = iota
	revisionStored
	revisionStripped
)

// revision is the number to write in status.observedRevision: 0 when none
// is known, or when the API server strips the field (a CRD installed from
// an older `operator crd`): sent again, it would be a request per
// reconcile that changes nothing.
func (r *Reconciler) revision() int64 {
	if r.revisionKept.Load() == revisionStripped {
		return 0
	}
	return r.Revision
}

// learnRevisionKept reads, from the first status write that sent
// observedRevision, whether the API server kept it; once known, nothing is
// read again (a decode per kind start, not per write).
func (r *Reconciler) learnRevisionKept(ctx context.Context, sent int64, written metav1.Object) {
	if sent == 0 || r.revisionKept.Load() != revisionUnknown {
		return
	}
	var u *unstructured.Unstructured
	switch w := written.(type) {
	case *unstructured.Unstructured:
		u = w
	case interface {
		Object() (*unstructured.Unstructured, error)
	}:
		var err error
		if u, err = w.Object(); err != nil {
			return
		}
	default:
		return
	}
	if u.Object["status"] == nil {
		return // a response without the status: nothing learnt
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", status.FieldObservedRevision); found {
		r.revisionKept.Store(revisionStored)
		return
	}
	if r.revisionKept.CompareAndSwap(revisionUnknown, revisionStripped) {
		klog.FromContext(ctx).Info("The kind's CRD has no status.observedRevision: the API server strips it, and the objects do not record their revision; regenerate the CRD (operator crd)",
			"kind", r.Kind.GVK.GroupKind().String())
	}
}

// revisionRefused reports whether err is the API server refusing a status
// apply for its observedRevision: a CRD whose structural schema does not
// declare it (one installed from an older `operator crd`, or by hand), for
// which server-side apply fails the whole request rather than pruning the
// field. The kind then stops sending it, as for a CRD that strips it.
func (r *Reconciler) revisionRefused(ctx context.Context, err error) bool {
	if !strings.Contains(err.Error(), ".status."+status.FieldObservedRevision+": field not declared in schema") {
		return false
	}
	if r.revisionKept.Swap(revisionStripped) != revisionStripped {
		klog.FromContext(ctx).Info("The kind's CRD does not declare status.observedRevision: the objects do not record their revision; regenerate the CRD (operator crd)",
			"kind", r.Kind.GVK.GroupKind().String())
	}
	return true
}
