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

// hookPhase is one of a chart's two sets of deletion hooks.
type hookPhase struct {
	name  string // pre-delete or post-delete
	hooks func(*Plan) []Child
}

var (
	preDelete  = hookPhase{"pre-delete", func(p *Plan) []Child { return p.DeleteHooks }}
	postDelete = hookPhase{"post-delete", func(p *Plan) []Child { return p.PostDeleteHooks }}
)

// runDeleteHooks applies a chart's hooks of phase to a parent being
// deleted and reports whether its deletion must wait for them: until each
// is Current (a Job complete). Pre-delete hooks run before the children
// go, as helm uninstall runs them before it deletes anything; post-delete
// hooks once the other children are gone, as helm uninstall runs them
// last.
//
// A render that fails at deletion, or a hook that Failed, is told in an
// Event and does not hold the deletion: a parent that can never go is
// worse than a hook not run. A failure to apply is an error, retried.
func (r *Reconciler) runDeleteHooks(ctx context.Context, obj *unstructured.Unstructured, phase hookPhase) (wait bool, err error) {
	t, err := r.plan(ctx, obj)
	if err != nil {
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, "DeleteHooksSkipped", "%s hooks not run, the object is deleted without them: %v", phase.name, err)
		return false, nil
	}
	hooks := phase.hooks(t.plan)
	if len(hooks) == 0 {
		return false, nil
	}
	desired, err := r.prepare(ctx, obj, &Plan{Children: hooks})
	if err != nil {
		return true, fmt.Errorf("%s hooks: %w", phase.name, err)
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
				r.Recorder.Eventf(obj, corev1.EventTypeWarning, "DeleteHooksSkipped", "%s hooks not run: the namespace is being deleted", phase.name)
				return false, nil
			}
			if err != nil {
				return true, fmt.Errorf("%s hook %s: %w", phase.name, c.Template, err)
			}
			live = out.Live
		}
		switch h := r.Kind.Health.Check(live); {
		case h.Status == health.Failed:
			r.Recorder.Eventf(obj, corev1.EventTypeWarning, "DeleteHookFailed", "%s hook %s failed, the object is deleted anyway: %s", phase.name, label(live), h.Message)
		case !h.Ready():
			pending = append(pending, label(live)+" "+h.String())
		}
	}
	if len(pending) > 0 {
		klog.FromContext(ctx).V(2).Info("Deletion waits for hooks", "phase", phase.name, "hooks", listed(pending))
		return true, nil
	}
	return false, nil
}
