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
	"github.com/tmplop/operator/engine/catalog"
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

// guard is the deletion guard's decision (Guard) as the reconcile acts on
// it: a hold that begins now is told in a Warning Event; a hold becomes the
// parent's PruneHeld condition and its AnnotationPruneHeld record.
func (r *Reconciler) guard(obj *unstructured.Unstructured, plan *Plan, existing, candidates map[apply.Key]apply.Child, total int, now time.Time) (pruneOutcome, bool) {
	h := Guard(r.Kind, obj, plan.EmptyLists, existing, candidates, total, now, r.pruneConfirmDelay())
	if h == nil {
		return pruneOutcome{}, false
	}
	if h.Begins {
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, "PruneHeld", "%s; waiting %s for a second render to agree", h.Why, h.Until.Sub(h.Since))
	}
	cond := status.PruneHeld(h.Reason, h.Message(), obj.GetGeneration(), metav1.NewTime(h.Since.UTC().Truncate(time.Second)))
	return pruneOutcome{held: &cond, meta: h.Record(), requeue: h.Until.Sub(now)}, true
}

// Hold is the deletion guard holding a prune back.
type Hold struct {
	// Reason is the PruneHeld condition's (status.ReasonMassDeletion,
	// status.ReasonLookupEmpty); Why says it in a sentence.
	Reason, Why string
	// Keys are the children the prune would delete, sorted.
	Keys []apply.Key
	// Fingerprint identifies Keys: a later render confirms the prune only
	// if it would delete the very same children.
	Fingerprint string
	// Since is when the hold began; Until when a render that agrees
	// confirms the prune.
	Since, Until time.Time
	// Begins is true when the parent records no hold of these children
	// yet: this render starts the clock.
	Begins bool
}

// Record is the parent's AnnotationPruneHeld value for h.
func (h *Hold) Record() string { return h.Fingerprint + " " + h.Since.UTC().Format(time.RFC3339Nano) }

// Message is the PruneHeld condition's message: why, which children (ten
// at most), and until when.
func (h *Hold) Message() string {
	names := make([]string, 0, min(len(h.Keys), 10))
	for _, k := range h.Keys[:min(len(h.Keys), 10)] {
		names = append(names, k.String())
	}
	if len(h.Keys) > 10 {
		names = append(names, fmt.Sprintf("and %d more", len(h.Keys)-10))
	}
	return fmt.Sprintf("%s (%s); holding the deletion until a render after %s agrees",
		h.Why, strings.Join(names, ", "), h.Until.UTC().Format(time.RFC3339))
}

// Guard is the deletion guard. A reconcile that would delete more than
// half of the parent's children (and more than one) while its spec has
// not changed, or every child a template rendered from a list lookup that
// now returns no items (emptyLists: render.Result's), is more likely a
// cache, a discovery hiccup or a template mistake than an intent. Such a
// prune waits: the parent records when it began (AnnotationPruneHeld) and
// says so (PruneHeld), and a second render at least delay later that would
// delete the very same children confirms it. Guard returns the hold, or
// nil when the prune goes ahead (nothing to guard, or confirmed). It reads
// only its arguments, so that operator plan decides as the reconcile does.
//
// existing are the parent's children, candidates those the prune would
// delete; total is the number of children the parent has: the rendered
// ones (just applied, whether or not the caches have seen them yet) and
// the candidates.
func Guard(kind *catalog.Kind, obj *unstructured.Unstructured, emptyLists []string, existing, candidates map[apply.Key]apply.Child, total int, now time.Time, delay time.Duration) *Hold {
	reason, why := "", ""
	for _, f := range emptyLists {
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
	if reason == "" && len(candidates) > 1 && 2*len(candidates) > total && stable(kind, obj) {
		reason, why = status.ReasonMassDeletion, fmt.Sprintf("%d of %d children would be deleted without a change of spec", len(candidates), total)
	}
	if reason == "" {
		return nil
	}
	keys := slices.SortedFunc(maps.Keys(candidates), func(a, b apply.Key) int { return strings.Compare(a.String(), b.String()) })
	h := &Hold{Reason: reason, Why: why, Keys: keys, Fingerprint: fingerprint(keys), Since: now, Begins: true}
	if prev, at, ok := parseHeld(obj.GetAnnotations()[AnnotationPruneHeld]); ok && prev == h.Fingerprint {
		h.Since, h.Begins = at, false
		if now.Sub(at) >= delay {
			return nil // a second render agrees: prune
		}
	}
	h.Until = h.Since.Add(delay)
	return h
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
