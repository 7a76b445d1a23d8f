package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/render"
	"github.com/tmplop/operator/engine/status"
)

// Reconciler reconciles the objects of one kind.
type Reconciler struct {
	Kind *catalog.Kind
	// Client makes every cluster call of the kind.
	Client  *kube.Client
	Applier *apply.Applier
	// Lookup returns what templates may read for parent; nil: nothing.
	Lookup   func(parent *unstructured.Unstructured) render.Lookup
	Recorder record.EventRecorder
	// Manager is the field manager and the value of the managed-by label.
	Manager string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Stats counts what the reconciler did; nil: not counted.
	Stats *Stats
}

// Result tells the controller when to reconcile the object again.
type Result struct {
	// RequeueAfter is the soonest time a template asked for; 0: only on change.
	RequeueAfter time.Duration
}

// TerminalError is a failure that retrying cannot fix: it is reported on
// the object and retried only when the object or the templates change.
type TerminalError struct{ Err error }

func (e *TerminalError) Error() string { return e.Err.Error() }
func (e *TerminalError) Unwrap() error { return e.Err }

// Reconcile runs the pipeline once for obj, a copy the caller owns.
func (r *Reconciler) Reconcile(ctx context.Context, obj *unstructured.Unstructured) (Result, error) {
	r.Stats.add(&r.Stats.Reconciles)
	if obj.GetDeletionTimestamp() != nil {
		return r.finalize(ctx, obj)
	}
	now := r.now()
	lookup := r.lookup(obj)
	plan, err := MakePlan(r.Kind, obj, render.Input{Lookup: lookup, Now: now}, r.Client.Namespaced, r.Manager)
	if err != nil {
		if IsPlanError(err) {
			return Result{}, r.fail(ctx, obj, status.ReasonRenderFailed, err, !errors.Is(err, ErrNotReady))
		}
		return Result{}, r.fail(ctx, obj, status.ReasonApplyFailed, err, false)
	}
	if err := r.ensureParent(ctx, obj, plan, true); err != nil {
		return Result{}, r.fail(ctx, obj, status.ReasonApplyFailed, err, false)
	}

	children := map[string]map[string]any{}
	keep := map[apply.Key]bool{}
	for _, c := range plan.Children {
		m, err := r.Client.Mapping(c.Object.GroupVersionKind())
		if err == nil {
			var out apply.Outcome
			out, err = r.Applier.Apply(ctx, r.Client, m, c.Object)
			if err == nil {
				r.Stats.applied(out.Skipped)
				keep[out.Key] = true
				byName := children[c.Object.GetKind()]
				if byName == nil {
					byName = map[string]any{}
					children[c.Object.GetKind()] = byName
				}
				byName[c.Object.GetName()] = out.Live.Object
				continue
			}
		}
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace, and the parent with it, is going away:
			// nothing to repair, nothing to report.
			klog.FromContext(ctx).V(2).Info("Namespace terminating: not applying", "template", c.Template)
			return Result{}, nil
		}
		return Result{}, r.fail(ctx, obj, status.ReasonApplyFailed, fmt.Errorf("%s: %w", c.Template, err), false)
	}

	sel := ownership.Selector(r.Manager, ownership.ParentOf(obj), obj.GetUID())
	selector, err := labels.Parse(sel)
	if err != nil {
		return Result{}, r.fail(ctx, obj, status.ReasonApplyFailed, err, true)
	}
	pruned, err := r.Applier.Prune(ctx, r.Client, selector, keep)
	for _, k := range pruned {
		r.Stats.add(&r.Stats.Pruned)
		r.Recorder.Eventf(obj, corev1.EventTypeNormal, "Pruned", "deleted %s: no template renders it any more", k)
	}
	if err != nil {
		return Result{}, r.fail(ctx, obj, status.ReasonApplyFailed, err, false)
	}
	if err := r.ensureParent(ctx, obj, plan, false); err != nil {
		return Result{}, r.fail(ctx, obj, status.ReasonApplyFailed, err, false)
	}

	sres, err := r.Kind.Templates.Status(render.Input{Object: obj.Object, Children: children, Lookup: lookup, Now: now})
	if err != nil {
		return Result{}, r.fail(ctx, obj, status.ReasonStatusFailed, err, !errors.Is(err, ErrNotReady))
	}
	rendered := sres.Status
	if rendered == nil {
		rendered = map[string]any{}
	}
	desired, err := status.Desired(obj, rendered, status.Reconciled(status.ReasonReconciled, "", obj.GetGeneration()), now)
	if err != nil {
		return Result{}, r.fail(ctx, obj, status.ReasonStatusFailed, err, true)
	}
	wrote, err := status.Write(ctx, r.Client, obj, desired)
	if err != nil {
		return Result{}, err // the condition cannot be written either: retry
	}
	if wrote {
		r.Stats.add(&r.Stats.StatusWrites)
	}
	return Result{RequeueAfter: Soonest(plan.RequeueAfter, sres.RequeueAfter)}, nil
}

// fail reports err on obj as the Reconciled condition and a Warning Event,
// keeping the rest of the status as it was, and returns the error for the
// controller: terminal ones are not retried until something changes.
func (r *Reconciler) fail(ctx context.Context, obj *unstructured.Unstructured, reason string, err error, terminal bool) error {
	r.Stats.add(&r.Stats.Failures)
	msg := err.Error()
	var re *render.Error
	if errors.As(err, &re) && re.Template != "" && !containsPrefix(msg, re.Template) {
		msg = re.Error()
	}
	klog.FromContext(ctx).Info("Reconcile failed", "reason", reason, "message", msg)
	r.Recorder.Event(obj, corev1.EventTypeWarning, reason, msg)
	desired, derr := status.Desired(obj, nil, status.Reconciled(reason, msg, obj.GetGeneration()), r.now())
	if derr == nil {
		wrote, werr := status.Write(ctx, r.Client, obj, desired)
		if werr != nil {
			return fmt.Errorf("%s: %w (and the condition could not be written: %v)", reason, err, werr)
		}
		if wrote {
			r.Stats.add(&r.Stats.StatusWrites)
		}
	}
	err = fmt.Errorf("%s: %w", reason, err)
	if terminal {
		return &TerminalError{Err: err}
	}
	return err
}

func (r *Reconciler) lookup(obj *unstructured.Unstructured) render.Lookup {
	if r.Lookup == nil {
		return nil
	}
	return r.Lookup(obj)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Soonest is the sooner of two requeue delays, 0 meaning none.
func Soonest(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

func containsPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// ErrNotReady marks a failure that will pass by itself (a cache not synced
// yet): even inside a render error, it is retried with backoff.
var ErrNotReady = errors.New("not ready yet, will retry")
