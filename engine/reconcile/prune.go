package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/status"
)

// DefaultPruneConfirmDelay is how long the deletion guard waits before a
// second render may confirm a prune it held back.
const DefaultPruneConfirmDelay = 30 * time.Second

// pruneOutcome is what the prune step did or holds back.
type pruneOutcome struct {
	deleted []apply.Key
	// held is the parent's PruneHeld condition while a prune is held back.
	held    *metav1.Condition
	meta    string        // the AnnotationPruneHeld value to keep on the parent
	requeue time.Duration // when to render again to confirm
}

// prune deletes the parent's children that are not in keep, over every
// kind the parent's kind has applied (the inventory) and the planned ones,
// so that a kind the templates stopped rendering is still pruned after a
// restart. Children with the prune: disabled annotation, the kind's kept
// children (a chart's helm.sh/resource-policy: keep on the live object, as
// helm upgrade reads it), and every child of a kind with prune: false,
// stay. The deletion guard may hold it back.
func (r *Reconciler) prune(ctx context.Context, obj *unstructured.Unstructured, plan *Plan, keep map[apply.Key]bool, now time.Time) (pruneOutcome, error) {
	if !r.Kind.Pruning() {
		return pruneOutcome{}, nil
	}
	mappings, err := r.pruneScope(ctx, plan)
	if err != nil {
		return pruneOutcome{}, err
	}
	existing, err := r.Applier.Owned(ctx, r.Client, mappings, obj.GetUID())
	if err != nil {
		return pruneOutcome{}, err
	}
	candidates := map[apply.Key]apply.Child{}
	for k, o := range existing {
		if !keep[k] && o.GetDeletionTimestamp() == nil && !ownership.PruneDisabled(o) && !r.Kind.Kept(o) {
			candidates[k] = o
		}
	}
	if len(candidates) == 0 {
		return pruneOutcome{}, nil
	}
	if out, hold := r.guard(obj, plan, existing, candidates, len(keep)+len(candidates), now); hold {
		return out, nil
	}
	deleted, err := r.Applier.Delete(ctx, r.Client, candidates)
	for _, k := range deleted {
		r.Stats.add(&r.Stats.Pruned)
		r.Recorder.Eventf(obj, corev1.EventTypeNormal, "Pruned", "deleted %s: no template renders it any more", k)
	}
	return pruneOutcome{deleted: deleted}, err
}

// pruneScope maps every kind recorded for the parent's kind, and every
// planned one, at its preferred version. A kind no longer served is
// skipped: its objects went with it.
func (r *Reconciler) pruneScope(ctx context.Context, plan *Plan) ([]*meta.RESTMapping, error) {
	gks, err := r.Inventory.ChildKinds(ctx, r.Kind.GVK.GroupKind())
	if err != nil {
		return nil, err
	}
	seen := map[schema.GroupKind]bool{}
	for _, gk := range gks {
		seen[gk] = true
	}
	for _, c := range plan.Children {
		seen[c.Object.GroupVersionKind().GroupKind()] = true
	}
	var out []*meta.RESTMapping
	for _, gk := range slices.SortedFunc(maps.Keys(seen), func(a, b schema.GroupKind) int { return strings.Compare(a.String(), b.String()) }) {
		m, err := r.Client.PreferredKind(gk)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("prune: %w", err)
		}
		out = append(out, m)
	}
	return out, nil
}

// guard is the deletion guard. A reconcile that would delete more than
// half of the parent's children (and more than one) while its spec has
// not changed, or every child a template rendered from a list lookup that
// now returns no items, is more likely a cache, a discovery hiccup or a
// template mistake than an intent. Such a prune waits: the parent records
// when it began (AnnotationPruneHeld) and says so (PruneHeld), and a second
// render at least PruneConfirmDelay later that would delete the very same
// children confirms it.
//
// total is the number of children the parent has: the rendered ones (just
// applied, whether or not the caches have seen them yet) and the candidates.
func (r *Reconciler) guard(obj *unstructured.Unstructured, plan *Plan, existing, candidates map[apply.Key]apply.Child, total int, now time.Time) (pruneOutcome, bool) {
	reason, why := "", ""
	for _, f := range plan.EmptyLists {
		n, gone := 0, 0
		for k, o := range existing {
			if o.GetAnnotations()[ownership.AnnotationTemplate] == f {
				n++
				if candidates[k] != nil {
					gone++
				}
			}
		}
		if n > 0 && gone == n {
			reason, why = status.ReasonLookupEmpty, fmt.Sprintf("a list lookup in %s returned no items, and all %d children it rendered would be deleted", f, n)
			break
		}
	}
	if reason == "" && len(candidates) > 1 && 2*len(candidates) > total && r.stable(obj) {
		reason, why = status.ReasonMassDeletion, fmt.Sprintf("%d of %d children would be deleted without a change of spec", len(candidates), total)
	}
	if reason == "" {
		return pruneOutcome{}, false
	}
	keys := slices.SortedFunc(maps.Keys(candidates), func(a, b apply.Key) int { return strings.Compare(a.String(), b.String()) })
	fp := fingerprint(keys)
	delay := r.pruneConfirmDelay()
	since := now
	if prev, at, ok := parseHeld(obj.GetAnnotations()[AnnotationPruneHeld]); ok && prev == fp {
		since = at
	}
	if elapsed := now.Sub(since); since != now && elapsed >= delay {
		return pruneOutcome{}, false // a second render agrees: prune
	}
	if since == now {
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, "PruneHeld", "%s; waiting %s for a second render to agree", why, delay)
	}
	names := make([]string, 0, min(len(keys), 10))
	for _, k := range keys[:min(len(keys), 10)] {
		names = append(names, k.String())
	}
	if len(keys) > 10 {
		names = append(names, fmt.Sprintf("and %d more", len(keys)-10))
	}
	msg := fmt.Sprintf("%s (%s); holding the deletion until a render after %s agrees",
		why, strings.Join(names, ", "), since.Add(delay).UTC().Format(time.RFC3339))
	cond := status.PruneHeld(reason, msg, obj.GetGeneration(), metav1.NewTime(since.UTC().Truncate(time.Second)))
	return pruneOutcome{held: &cond, meta: fp + " " + since.UTC().Format(time.RFC3339Nano), requeue: since.Add(delay).Sub(now)}, true
}

func fingerprint(keys []apply.Key) string {
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k.String()))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func parseHeld(v string) (fp string, since time.Time, ok bool) {
	fp, at, found := strings.Cut(v, " ")
	if !found {
		return "", time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	return fp, t, err == nil
}

func (r *Reconciler) pruneConfirmDelay() time.Duration {
	if r.PruneConfirmDelay > 0 {
		return r.PruneConfirmDelay
	}
	return DefaultPruneConfirmDelay
}
