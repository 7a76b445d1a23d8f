package reconcile

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/health"
)

// deleteHookRetry is when finalize looks again at pre-delete hooks that are
// not Current yet, if no event of theirs woke it before.
const deleteHookRetry = 2 * time.Second

// runDeleteHooks applies a chart's pre-delete hooks to a parent being
// deleted and reports whether its deletion must wait for them: until each
// is Current (a Job complete), the children stay and the finalizer holds,
// as helm uninstall runs them before it deletes anything.
//
// A render that fails at deletion, or a hook that Failed, is told in an
// Event and does not hold the deletion: a parent that can never go is
// worse than a hook not run. A failure to apply is an error, retried.
func (r *Reconciler) runDeleteHooks(ctx context.Context, obj *unstructured.Unstructured) (wait bool, err error) {
	t, err := r.plan(ctx, obj)
	if err != nil {
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, "DeleteHooksSkipped", "pre-delete hooks not run, the object is deleted without them: %v", err)
		return false, nil
	}
	if len(t.plan.DeleteHooks) == 0 {
		return false, nil
	}
	desired, err := r.prepare(ctx, obj, &Plan{Children: t.plan.DeleteHooks})
	if err != nil {
		return true, fmt.Errorf("pre-delete hooks: %w", err)
	}
	var pending []string
	for i, d := range desired {
		c := t.plan.DeleteHooks[i]
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
				r.Recorder.Eventf(obj, corev1.EventTypeWarning, "DeleteHooksSkipped", "pre-delete hooks not run: the namespace is being deleted")
				return false, nil
			}
			if err != nil {
				return true, fmt.Errorf("pre-delete hook %s: %w", c.Template, err)
			}
			live = out.Live
		}
		switch h := r.Kind.Health.Check(live); {
		case h.Status == health.Failed:
			r.Recorder.Eventf(obj, corev1.EventTypeWarning, "DeleteHookFailed", "pre-delete hook %s failed, the object is deleted anyway: %s", label(live), h.Message)
		case !h.Ready():
			pending = append(pending, label(live)+" "+h.String())
		}
	}
	if len(pending) > 0 {
		klog.FromContext(ctx).V(2).Info("Deletion waits for pre-delete hooks", "hooks", listed(pending))
		return true, nil
	}
	return false, nil
}
