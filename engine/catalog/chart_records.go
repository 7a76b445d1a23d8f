package catalog

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tmplop/operator/engine/chart"
	"github.com/tmplop/operator/engine/ownership"
)

// A chart kind's objects keep records of its hooks in their status.hooks,
// written by the engine (engine/reconcile) through the status subresource:
//
//   - A hook with hook-delete-policy hook-succeeded that completed:
//     "Kind/name" -> the hash of what ran (Record), so that a later render
//     leaves it out (Done: the prune step deletes it) until its content
//     changes, as Helm deletes such a hook and runs it again only at the
//     next upgrade.
//   - A deletion step that ran: "pre-delete" or "post-delete" -> the
//     deletion's timestamp (DeleteSteps). Once the pre-delete hooks ran,
//     the children are deleted, the hooks among them, and a hook gone must
//     not be taken for one not run yet; the same for the post-delete
//     hooks, deleted once they ran.
//
// Why the status:
//   - The status is written through its subresource, which the object's
//     author does not write: RBAC grants <resource>/status apart from the
//     resource (operator rbac gives it to the kind's account alone), and a
//     create drops the status. An annotation, as the record of the deletion
//     hooks was, is the author's to write, and setting it skipped the hooks.
//   - A deletion step's timestamp binds its record to this deletion: none
//     written before it, by whatever means, counts.
//   - It is the cluster's, not the operator's memory: a restart neither runs
//     the hooks again nor skips them.

// statusHooks is the field of a chart kind's status that holds the records.
const statusHooks = "hooks"

// The chart's delete steps, by their names: Helm's hook events.
const (
	preDelete  = "pre-delete"
	postDelete = "post-delete"
)

// hookKey names a hook in status.hooks.
func hookKey(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }

// hookRecords is status.hooks of obj: hook or step -> hash or timestamp.
func hookRecords(obj map[string]any) map[string]string {
	recs, _, _ := unstructured.NestedStringMap(obj, "status", statusHooks)
	return recs
}

// Done: a hook-succeeded hook that obj's status records as succeeded with
// the same content.
func (chartFormat) Done(obj map[string]any, child *unstructured.Unstructured) bool {
	if _, recorded, _ := unstructured.NestedFieldNoCopy(obj, "status", statusHooks); !recorded {
		return false // nothing recorded: no copy of the child's annotations
	}
	ann := child.GetAnnotations()
	if !chart.DeleteOnSuccess(ann) {
		return false
	}
	rec, ok := hookRecords(obj)[hookKey(child)]
	return ok && rec == ann[ownership.AnnotationHash]
}

// Record adds the hook-succeeded hooks among current (Current now) to the
// records of obj's status.
func (chartFormat) Record(status, obj map[string]any, current []*unstructured.Unstructured) (added bool) {
	recs := hookRecords(obj)
	for _, c := range current {
		ann := c.GetAnnotations()
		if !chart.DeleteOnSuccess(ann) {
			continue
		}
		key, hash := hookKey(c), ann[ownership.AnnotationHash]
		if recs[key] != hash {
			added = true
		}
		if recs == nil {
			recs = map[string]string{}
		}
		recs[key] = hash
	}
	if status != nil && len(recs) > 0 {
		out := make(map[string]any, len(recs))
		for k, v := range recs {
			out[k] = v
		}
		status[statusHooks] = out
	}
	return added
}

// DeleteSteps run the chart's hooks as helm uninstall does: the pre-delete
// hooks before any child goes, the post-delete hooks once every other
// child is gone (and then deleted like the others, so that nothing is left
// behind when the finalizer is released).
func (chartFormat) DeleteSteps() []DeleteStep {
	return []DeleteStep{
		hookStep(preDelete, false, nil),
		hookStep(postDelete, true, func(c metav1.Object) bool { return chart.IsPostDeleteHook(c.GetAnnotations()) }),
	}
}

// hookStep is the delete step of the hooks of one deletion event, recorded
// under its name in status.hooks.
func hookStep(name string, last bool, holds func(metav1.Object) bool) DeleteStep {
	return DeleteStep{
		Name: name, Last: last, Holds: holds,
		Ran: func(obj map[string]any) bool {
			at := deletionStamp(obj)
			return at != "" && hookRecords(obj)[name] == at
		},
		Record: func(status, obj map[string]any) {
			hooks, _ := status[statusHooks].(map[string]any)
			if hooks == nil {
				hooks = map[string]any{}
			}
			hooks[name] = deletionStamp(obj)
			status[statusHooks] = hooks
		},
	}
}

// deletionStamp is the value of a record of obj's deletion: its
// deletionTimestamp, "" when it is not being deleted.
func deletionStamp(obj map[string]any) string {
	ts := (&unstructured.Unstructured{Object: obj}).GetDeletionTimestamp()
	if ts == nil {
		return ""
	}
	return ts.UTC().Format(time.RFC3339)
}
