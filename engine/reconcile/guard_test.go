package reconcile

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/apply"
	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/ownership"
	"github.com/tmplop/operator/engine/status"
)

// TestGuard: the deletion guard's decision, which the reconcile acts on
// and operator plan reports: what it holds, when the clock starts, and
// when a second render confirms.
func TestGuard(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	delay := 30 * time.Second
	custom := &catalog.Kind{Name: "app", GVK: schema.GroupVersionKind{Group: "e.io", Version: "v1", Kind: "App"}}
	builtIn := &catalog.Kind{Name: "cm", GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}}

	// children a..e of the parent: a, b and c rendered by list.yaml.
	existing := map[apply.Key]apply.Child{}
	key := func(name string) apply.Key {
		return apply.Key{GR: schema.GroupResource{Resource: "configmaps"}, Namespace: "ns", Name: name}
	}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		c := &unstructured.Unstructured{}
		c.SetAPIVersion("v1")
		c.SetKind("ConfigMap")
		c.SetNamespace("ns")
		c.SetName(name)
		file := "one.yaml"
		if name <= "c" {
			file = "list.yaml"
		}
		c.SetAnnotations(map[string]string{ownership.AnnotationTemplate: file})
		existing[key(name)] = c
	}
	pick := func(names ...string) map[apply.Key]apply.Child {
		out := map[apply.Key]apply.Child{}
		for _, n := range names {
			out[key(n)] = existing[key(n)]
		}
		return out
	}
	fp := func(names ...string) string {
		keys := make([]apply.Key, 0, len(names))
		for _, n := range names {
			keys = append(keys, key(n))
		}
		return fingerprint(keys)
	}
	// parent at generation 3; reconciledAt is the generation its
	// Reconciled condition reports (0: none); held its prune-held record.
	parent := func(reconciledAt int64, held string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e.io/v1", "kind": "App"}}
		o.SetGeneration(3)
		if held != "" {
			o.SetAnnotations(map[string]string{AnnotationPruneHeld: held})
		}
		if reconciledAt > 0 {
			o.Object["status"] = map[string]any{"conditions": []any{map[string]any{
				"type": status.ConditionReconciled, "status": "True", "reason": status.ReasonReconciled,
				"observedGeneration": reconciledAt, "lastTransitionTime": "2026-11-29T11:00:00Z", "message": "",
			}}}
		}
		return o
	}
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }

	for _, tc := range []struct {
		name       string
		kind       *catalog.Kind
		obj        *unstructured.Unstructured
		emptyLists []string
		candidates []string
		rendered   int
		// want: "" for no hold, else the reason; then Begins and Since.
		want   string
		begins bool
		since  time.Time
	}{
		{name: "one child of five", kind: custom, obj: parent(3, ""), candidates: []string{"e"}, rendered: 4},
		{name: "two of five", kind: custom, obj: parent(3, ""), candidates: []string{"d", "e"}, rendered: 3},
		{name: "three of five, spec unchanged", kind: custom, obj: parent(3, ""), candidates: []string{"a", "d", "e"}, rendered: 2,
			want: status.ReasonMassDeletion, begins: true, since: now},
		{name: "one of one is not mass", kind: custom, obj: parent(3, ""), candidates: []string{"e"}, rendered: 0},
		{name: "three of five, spec changed", kind: custom, obj: parent(2, ""), candidates: []string{"a", "d", "e"}, rendered: 2},
		{name: "three of five, never reconciled", kind: custom, obj: parent(0, ""), candidates: []string{"a", "d", "e"}, rendered: 2},
		{name: "built-in kind: spec taken as unchanged", kind: builtIn, obj: parent(0, ""), candidates: []string{"a", "d", "e"}, rendered: 2,
			want: status.ReasonMassDeletion, begins: true, since: now},
		{name: "a list lookup gone empty, spec changed", kind: custom, obj: parent(2, ""), emptyLists: []string{"list.yaml"},
			candidates: []string{"a", "b", "c"}, rendered: 2, want: status.ReasonLookupEmpty, begins: true, since: now},
		{name: "a list lookup gone empty, one of its children kept", kind: custom, obj: parent(2, ""), emptyLists: []string{"list.yaml"},
			candidates: []string{"a", "b"}, rendered: 3},
		{name: "held 10s ago: still held, the clock kept", kind: custom, obj: parent(3, fp("a", "d", "e")+" "+at(-10*time.Second)),
			candidates: []string{"a", "d", "e"}, rendered: 2, want: status.ReasonMassDeletion, since: now.Add(-10 * time.Second)},
		{name: "held for the delay: confirmed", kind: custom, obj: parent(3, fp("a", "d", "e")+" "+at(-delay)),
			candidates: []string{"a", "d", "e"}, rendered: 2},
		{name: "held for other children: the clock starts again", kind: custom, obj: parent(3, fp("a", "b", "e")+" "+at(-time.Hour)),
			candidates: []string{"a", "d", "e"}, rendered: 2, want: status.ReasonMassDeletion, begins: true, since: now},
		{name: "a record that does not parse: held anew", kind: custom, obj: parent(3, "garbage"),
			candidates: []string{"a", "d", "e"}, rendered: 2, want: status.ReasonMassDeletion, begins: true, since: now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			candidates := pick(tc.candidates...)
			h := Guard(tc.kind, tc.obj, tc.emptyLists, existing, candidates, tc.rendered+len(candidates), now, delay)
			if tc.want == "" {
				if h != nil {
					t.Fatalf("held (%s: %s), want the prune to go ahead", h.Reason, h.Why)
				}
				return
			}
			if h == nil {
				t.Fatalf("not held, want held for %s", tc.want)
			}
			if h.Reason != tc.want || h.Begins != tc.begins || !h.Since.Equal(tc.since) || !h.Until.Equal(tc.since.Add(delay)) {
				t.Errorf("hold %s, begins %v, since %s, until %s; want %s, %v, %s, %s",
					h.Reason, h.Begins, h.Since, h.Until, tc.want, tc.begins, tc.since, tc.since.Add(delay))
			}
			if want := fp(tc.candidates...); h.Fingerprint != want || len(h.Keys) != len(tc.candidates) {
				t.Errorf("fingerprint %s of %d keys, want %s of %d", h.Fingerprint, len(h.Keys), want, len(tc.candidates))
			}
			// The record the parent keeps reads back as the same hold.
			fpBack, sinceBack, ok := parseHeld(h.Record())
			if !ok || fpBack != h.Fingerprint || !sinceBack.Equal(h.Since) {
				t.Errorf("record %q reads back as %s %s %v", h.Record(), fpBack, sinceBack, ok)
			}
			if msg := h.Message(); !strings.Contains(msg, h.Why) || !strings.Contains(msg, h.Until.UTC().Format(time.RFC3339)) {
				t.Errorf("message %q lacks why or until", msg)
			}
		})
	}
}

// TestHoldMessageNamesTen: a hold of many children names ten of them and
// counts the rest, so that the condition stays short.
func TestHoldMessageNamesTen(t *testing.T) {
	h := &Hold{Why: "why", Until: time.Date(2026, 11, 29, 12, 0, 30, 0, time.UTC)}
	for i := range 12 {
		h.Keys = append(h.Keys, apply.Key{GR: schema.GroupResource{Resource: "configmaps"}, Namespace: "ns", Name: fmt.Sprintf("c%02d", i)})
	}
	msg := h.Message()
	if !strings.Contains(msg, "ns/c09") || strings.Contains(msg, "ns/c10") || !strings.Contains(msg, "and 2 more") {
		t.Errorf("message %q: want c00..c09 named and 2 more counted", msg)
	}
}
