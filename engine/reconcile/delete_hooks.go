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

// The record that a chart's deletion hooks ran. Once the pre-delete hooks
// ran, the children are deleted, the hooks among them, and a hook gone must
// not be taken for one not run yet; the same for the post-delete hooks,
// deleted once they ran. The parent records each phase in its status.hooks
// (key "pre-delete" or "post-delete", beside the hook-succeeded records of
// hooks.go), with the deletion's timestamp as the value:
//
//   - The status is written through its subresource, which the object's
//     author does not write: RBAC grants <resource>/status apart from the
//     resource (operator rbac gives it to the kind's account alone), and a
//     create drops the status. An annotation, as the record was, is the
//     author's to write, and setting it skipped the hooks.
//   - The timestamp binds the record to this deletion: none written before
//     it, by whatever means, counts.
//   - It is the cluster's, not the operator's memory: a restart neither runs
//     the hooks again nor skips them.

// deleteHooksRan reports, by phase name, whether obj's status records that
// its hooks of that phase ran for the deletion under way.
func deleteHooksRan(obj *unstructured.Unstructured) map[string]bool {
	at := deletionStamp(obj)
	recs := hookRecords(obj)
	ran := map[string]bool{}
	for _, phase := range []hookPhase{preDelete, postDelete} {
		ran[phase.name] = at != "" && recs[phase.name] == at
	}
	return ran
}

// deletionStamp is the value of a record of obj's deletion: its
// deletionTimestamp, "" when it is not being deleted.
func deletionStamp(obj *unstructured.Unstructured) string {
	ts := obj.GetDeletionTimestamp()
	if ts == nil {
		return ""
	}
	return ts.UTC().Format(time.RFC3339)
}

// recordDeleteHooks records in obj's status that its hooks of phase ran for
// this deletion, the rest of the status as it is.
func (r *Reconciler) recordDeleteHooks(ctx context.Context, obj *unstructured.Unstructured, phase hookPhase) error {
	st := statusOf(obj) // a copy
	if st == nil {
		st = map[string]any{}
	}
	hooks, _ := st[statusHooks].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	hooks[phase.name] = deletionStamp(obj)
	st[statusHooks] = hooks
	if err := r.writeStatus(ctx, obj, st, nil); err != nil {
		return err
	}
	// The rest of this pass reads obj: a second record written from it
	// must carry the first, or the apply would take the first away.
	if err := unstructured.SetNestedField(obj.Object, hooks, "status", statusHooks); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Recorded the deletion hooks", "phase", phase.name, "deletionTimestamp", hooks[phase.name])
	return nil
}

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
