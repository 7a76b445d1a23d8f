package reconcile

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/ownership"
)

// The hook-delete-policies of a chart's hooks (docs/helm.md), kept in the
// cluster: a hook-succeeded hook that completed is recorded in the
// parent's status.hooks with the hash of what ran, so that a later render
// leaves it out (and the prune step deletes it) until its content changes.
// A restart loses nothing: the record is the object's.

// statusHooks is the field of a chart kind's status that records them.
const statusHooks = "hooks"

// hookKey names a hook in status.hooks.
func hookKey(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }

// hookRecords is status.hooks of obj: hook -> hash of what succeeded.
func hookRecords(obj *unstructured.Unstructured) map[string]string {
	recs, _, _ := unstructured.NestedStringMap(obj.Object, "status", statusHooks)
	return recs
}

// withoutDoneHooks leaves out of children the hook-succeeded hooks that
// obj's status records as succeeded with the same content.
func withoutDoneHooks(obj *unstructured.Unstructured, children []Child) []Child {
	recs := hookRecords(obj)
	if len(recs) == 0 {
		return children
	}
	out := children[:0:0]
	for _, c := range children {
		ann := c.Object.GetAnnotations()
		if chart.DeleteOnSuccess(ann) && recs[hookKey(c.Object)] == ann[ownership.AnnotationHash] {
			continue
		}
		out = append(out, c)
	}
	return out
}

// succeededHooks adds to obj's records the hook-succeeded hooks of the
// plan that are Current now; nil when there are no records at all.
func succeededHooks(obj *unstructured.Unstructured, children []Child, states []childState) map[string]any {
	recs := hookRecords(obj)
	for i, c := range children {
		ann := c.Object.GetAnnotations()
		if chart.DeleteOnSuccess(ann) && states[i].live && states[i].health.Ready() {
			if recs == nil {
				recs = map[string]string{}
			}
			recs[hookKey(c.Object)] = ann[ownership.AnnotationHash]
		}
	}
	if len(recs) == 0 {
		return nil
	}
	out := make(map[string]any, len(recs))
	for k, v := range recs {
		out[k] = v
	}
	return out
}

// recreateRetry is when a reconcile that deleted a hook to create it anew
// looks again, if the deletion's event did not wake it before.
const recreateRetry = 2 * time.Second

// recreate deletes a hook whose content changed, when its policy is
// before-hook-creation: it is created anew by the reconcile its deletion
// wakes, as Helm deletes and creates a hook again. It reports whether it
// did.
func (r *Reconciler) recreate(ctx context.Context, c Child, d *apply.Desired) (bool, error) {
	if r.Kind.Chart == nil || d.Live == nil || d.UpToDate || !chart.RecreateOnChange(c.Object.GetAnnotations()) {
		return false, nil
	}
	if err := r.Client.Delete(ctx, c.Object.GroupVersionKind(), d.Live.GetNamespace(), d.Live.GetName(), d.Live.GetUID()); err != nil {
		return false, err
	}
	return true, nil
}
