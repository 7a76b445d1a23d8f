package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/tmplop/operator/engine/apply"
)

// appliedChildren is what the apply step leaves for the prune and status
// steps.
type appliedChildren struct {
	// gate holds each planned child's state (waiting, live, health), the
	// live object and the waits.
	gate *Gate
	// keep are the children the prune must keep: every planned one.
	keep map[apply.Key]bool
	// created are the children this reconcile created outside the
	// namespace (verifyParent).
	created map[apply.Key]apply.Child
	// gone is set when the parent or its namespace is going away: nothing
	// to report.
	gone bool
	// recreated is set when a child was deleted to be created anew
	// (catalog.Kind.Recreate): the reconcile its deletion wakes must apply
	// it, not find it remembered as absent.
	recreated bool
}

// applyChildren applies the claimed children in order (CRDs and
// Namespaces first, then each template after those it dependsOn): a child
// that would be written waits until what it depends on is Current; one up
// to date has nothing to wait for. It judges each live child's health, and
// checks that a parent which got children outside its namespace still
// exists.
func (r *Reconciler) applyChildren(ctx context.Context, t *trip) (*appliedChildren, error) {
	a := &appliedChildren{gate: NewGate(r.Kind, t.plan), keep: map[apply.Key]bool{}, created: map[apply.Key]apply.Child{}}
	for _, i := range a.gate.Order() {
		d := t.desired[i]
		a.keep[d.Key] = true
		_, waiting := a.gate.Hold(i, d.UpToDate, d.Mapping != nil)
		live := d.Live
		if !waiting && !t.skip[i] {
			recreated, why, err := r.recreate(ctx, t.plan.Children[i], d)
			if err != nil {
				return nil, fmt.Errorf("%s: recreate %s: %w", t.plan.Children[i].Template, d.Key, err)
			}
			if recreated {
				// Created anew by the reconcile its deletion wakes; what
				// depends on it waits for it meanwhile.
				a.recreated = true
				a.gate.Defer(i, "deleted, to be created anew ("+why+")")
				continue
			}
			out, err := r.Applier.Apply(ctx, r.Client, d)
			if err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					// The namespace, and the parent with it, is going away:
					// nothing to repair, nothing to report.
					klog.FromContext(ctx).V(2).Info("Namespace terminating: not applying", "template", t.plan.Children[i].Template)
					a.gone = true
					return a, nil
				}
				return nil, fmt.Errorf("%s: %w", t.plan.Children[i].Template, err)
			}
			r.Stats.applied(out.Skipped)
			if dr, ok := t.drifts[i]; ok && !out.Skipped {
				r.driftRepaired(t.obj, dr)
			}
			live = out.Live
			if t.plan.Children[i].NeedsFinalizer && d.Live == nil {
				a.created[d.Key] = out.Live
			}
		}
		a.gate.Done(i, live)
	}
	if a.gate.Waiting() {
		klog.FromContext(ctx).V(2).Info("Children wait for their dependencies", "waits", fmt.Sprint(a.gate.waits))
	}
	if err := r.verifyParent(ctx, t.obj, a.created); err != nil {
		if errors.Is(err, errParentGone) {
			a.gone = true
			return a, nil
		}
		return nil, err
	}
	return a, nil
}

// recreateRetry is when a reconcile that deleted a child to create it anew
// looks again, if the deletion's event did not wake it before.
const recreateRetry = 2 * time.Second

// recreate deletes a child whose content changed when its kind creates
// such a child anew rather than patching it (catalog.Kind.Recreate: a
// chart's hook with hook-delete-policy before-hook-creation, as Helm
// deletes and creates a hook again): it is created by the reconcile its
// deletion wakes. It reports whether it did, and why.
func (r *Reconciler) recreate(ctx context.Context, c Child, d *apply.Desired) (recreated bool, why string, err error) {
	if d.Live == nil || d.UpToDate {
		return false, "", nil
	}
	if why, recreated = r.Kind.Recreate(c.Object); !recreated {
		return false, "", nil
	}
	if err := r.Client.Delete(ctx, c.Object.GroupVersionKind(), d.Live.GetNamespace(), d.Live.GetName(), d.Live.GetUID()); err != nil {
		return false, "", err
	}
	return true, why, nil
}
