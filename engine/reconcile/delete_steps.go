package reconcile

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/health"
)

// deleteHookRetry is when finalize looks again at the children of a delete
// step that are not Current yet, if no event of theirs woke it before.
const deleteHookRetry = 2 * time.Second

// deleteStep runs step and records that it ran. ok is false while the
// deletion must stop here: the step's children are not Current yet, or it
// failed.
func (r *Reconciler) deleteStep(ctx context.Context, obj *unstructured.Unstructured, step catalog.DeleteStep) (res Result, ok bool, err error) {
	if wait, err := r.runDeleteStep(ctx, obj, step); err != nil || wait {
		return Result{RequeueAfter: deleteHookRetry}, false, err
	}
	if err := r.recordDeleteStep(ctx, obj, step); err != nil {
		return Result{}, false, fmt.Errorf("finalize: record the %s hooks: %w", step.Name, err)
	}
	return Result{}, true, nil
}

// recordDeleteStep records in obj's status that step ran for this
// deletion (the record is the kind's: catalog.DeleteStep.Record), the rest
// of the status as it is.
func (r *Reconciler) recordDeleteStep(ctx context.Context, obj *unstructured.Unstructured, step catalog.DeleteStep) error {
	st := statusOf(obj) // a copy
	if st == nil {
		st = map[string]any{}
	}
	step.Record(st, obj.Object)
	if err := r.writeStatus(ctx, obj, st, nil); err != nil {
		return err
	}
	// The rest of this pass reads obj: a second record written from it
	// must carry the first, or the apply would take the first away.
	obj.Object["status"] = st
	klog.FromContext(ctx).V(2).Info("Recorded the deletion hooks", "phase", step.Name, "deletionTimestamp", obj.GetDeletionTimestamp())
	return nil
}

// runDeleteStep applies the children of step (its hooks: a chart's
// pre-delete or post-delete hooks) to a parent being deleted and reports
// whether its deletion must wait for them: until each is Current (a Job
// complete).
//
// A render that fails at deletion, or a hook that Failed, is told in an
// Event and does not hold the deletion: a parent that can never go is
// worse than a hook not run. A failure to apply is an error, retried.
func (r *Reconciler) runDeleteStep(ctx context.Context, obj *unstructured.Unstructured, step catalog.DeleteStep) (wait bool, err error) {
	t, err := r.plan(ctx, obj)
	if err != nil {
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, "DeleteHooksSkipped", "%s hooks not run, the object is deleted without them: %v", step.Name, err)
		return false, nil
	}
	hooks := t.plan.OnDelete[step.Name]
	if len(hooks) == 0 {
		return false, nil
	}
	desired, err := r.prepare(ctx, obj, &Plan{Children: hooks})
	if err != nil {
		return true, fmt.Errorf("%s hooks: %w", step.Name, err)
	}
	var pending []string
	for i, d := range desired {
		c := hooks[i]
		if d.Mapping == nil {
			pending = append(pending, label(c.Object)+": its kind is not served yet")
			continue
		}
		live := d.Live
		if !d.UpToDate {
			out, err := r.Applier.Apply(ctx, r.Client, d)
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				// The namespace goes, and everything in it: no hook can
				// be created there any more.
				r.Recorder.Eventf(obj, corev1.EventTypeWarning, "DeleteHooksSkipped", "%s hooks not run: the namespace is being deleted", step.Name)
				return false, nil
			}
			if err != nil {
				return true, fmt.Errorf("%s hook %s: %w", step.Name, c.Template, err)
			}
			live = out.Live
		}
		switch h := r.Kind.Health.Check(live); {
		case h.Status == health.Failed:
			r.Recorder.Eventf(obj, corev1.EventTypeWarning, "DeleteHookFailed", "%s hook %s failed, the object is deleted anyway: %s", step.Name, label(live), h.Message)
		case !h.Ready():
			pending = append(pending, label(live)+" "+h.String())
		}
	}
	if len(pending) > 0 {
		klog.FromContext(ctx).V(2).Info("Deletion waits for hooks", "phase", step.Name, "hooks", listed(pending))
		return true, nil
	}
	return false, nil
}
