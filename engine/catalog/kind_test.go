package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

func TestParseSpec(t *testing.T) {
	cases := []struct {
		name    string
		yaml    string
		wantErr string
		check   func(t *testing.T, k *Kind)
	}{
		{name: "defaults", yaml: "apiVersion: a.example.com/v1\nkind: A\n", check: func(t *testing.T, k *Kind) {
			if !k.Pruning() || k.ObjectSelector() != "" || k.RenderBudget(render.Budget{Timeout: time.Second}).Timeout != time.Second {
				t.Errorf("defaults: prune %v selector %q", k.Pruning(), k.ObjectSelector())
			}
		}},
		{name: "selector, prune and budget", yaml: `apiVersion: a.example.com/v1
kind: A
selector:
  matchLabels: {team: a}
  matchExpressions: [{key: tier, operator: In, values: [web]}]
prune: false
budget: {timeout: 5s, maxManifests: 10}
lookups:
- {apiVersion: v1, kind: Pod, selector: {matchLabels: {app: x}}}
`, check: func(t *testing.T, k *Kind) {
			if k.Pruning() {
				t.Error("prune: false not read")
			}
			if got := k.ObjectSelector(); got != "team=a,tier in (web)" {
				t.Errorf("selector = %q", got)
			}
			b := k.RenderBudget(render.Budget{Timeout: time.Second, MaxCalls: 7})
			if b.Timeout != 5*time.Second || b.MaxManifests != 10 || b.MaxCalls != 7 {
				t.Errorf("budget = %+v", b)
			}
			if got := k.Spec.Lookups[0].LookupSelector(); got != "app=x" {
				t.Errorf("lookup selector = %q", got)
			}
		}},
		{name: "revisionHistoryLimit", yaml: "apiVersion: a.example.com/v1\nkind: A\nrevisionHistoryLimit: 0\n", check: func(t *testing.T, k *Kind) {
			if got := k.RevisionHistoryLimit(); got != 0 {
				t.Errorf("RevisionHistoryLimit = %d, want 0", got)
			}
			if got := (&Kind{}).RevisionHistoryLimit(); got != DefaultRevisionHistoryLimit {
				t.Errorf("default RevisionHistoryLimit = %d, want %d", got, DefaultRevisionHistoryLimit)
			}
		}},
		{name: "rollout in steps", yaml: "apiVersion: a.example.com/v1\nkind: A\nrollout:\n  steps: [1, 10%, \"50%\"]\n  canary: {matchLabels: {tier: canary}}\n  stepDeadline: 5m\n", check: func(t *testing.T, k *Kind) {
			if !k.Staged() {
				t.Fatal("not staged")
			}
			r := k.Spec.Rollout
			if got := fmt.Sprint(r.Steps); got != "[1 10% 50% 100%]" || r.Deadline() != 5*time.Minute || !r.Canaries(map[string]string{"tier": "canary"}) {
				t.Errorf("rollout = steps %s, deadline %s", got, r.Deadline())
			}
		}},
		{name: "rollout all", yaml: "apiVersion: a.example.com/v1\nkind: A\nrollout: all\n", check: func(t *testing.T, k *Kind) {
			if k.Staged() {
				t.Error("rollout: all is staged")
			}
		}},
		{name: "bad selector", yaml: "apiVersion: a.example.com/v1\nkind: A\nselector: {matchExpressions: [{key: x, operator: Bogus}]}\n", wantErr: "selector"},
		{name: "negative budget", yaml: "apiVersion: a.example.com/v1\nkind: A\nbudget: {maxCalls: -1}\n", wantErr: "budget"},
		{name: "lookup declared twice", yaml: "apiVersion: a.example.com/v1\nkind: A\nlookups: [{apiVersion: v1, kind: Pod}, {apiVersion: v1, kind: Pod, allNamespaces: true}]\n", wantErr: "already declared"},
		{name: "status of a built-in kind", yaml: "apiVersion: v1\nkind: Namespace\n", wantErr: "not the operator's to write"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"kind.yaml": tc.yaml, "status.yaml": "a: 1\n"}
			if !strings.Contains(tc.name, "status") {
				delete(files, "status.yaml")
			}
			for f, c := range files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			k, err := LoadKind(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, k)
		})
	}
}

// FuzzParseSpec: kind.yaml from anyone parses or fails with an error, never
// a panic, and what parses has a kind and valid selectors.
func FuzzParseSpec(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nlookups:\n- apiVersion: v1\n  kind: Pod\n",
		"apiVersion: v1\nkind: Namespace\nallowClusterScoped: true\nselector: {matchLabels: {a: b}}\n",
		"apiVersion: a/b/c\nkind: X\n",
		"apiVersion: a.io/v1\nkind: X\nbudget: {timeout: 1h, maxOutputBytes: 9223372036854775807}\n",
		"apiVersion: a.io/v1\nkind: X\nworkers: -1\n",
		"[1, 2]",
		"apiVersion: a.io/v1\nkind: X\nlookups: [{apiVersion: v1, kind: Pod, selector: {matchExpressions: [{key: a, operator: Exists}]}}]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseSpec(data)
		if err != nil {
			return
		}
		if s.APIVersion == "" || s.Kind == "" {
			t.Fatalf("accepted a spec without apiVersion or kind: %+v", s)
		}
		if _, err := selectorString(s.Selector); err != nil {
			t.Fatalf("accepted a bad selector: %v", err)
		}
	})
}

// TestShortSchemas: the schemas kind.yaml's short schema gives, parsed at
// load, are handed out as copies: engine/crd completes them, and must not
// complete the Kind's.
func TestShortSchemas(t *testing.T) {
	k, err := Compile("w", "w", layout.Files{KindFile: []byte("apiVersion: a.example.com/v1\nkind: A\nspec:\n  size: integer\nstatus:\n  phase: string\n")})
	if err != nil {
		t.Fatal(err)
	}
	spec, status := k.ShortSchemas()
	if spec.Properties["size"].Type != "integer" || status.Properties["phase"].Type != "string" {
		t.Fatalf("spec %+v, status %+v", spec, status)
	}
	status.Properties["observedGeneration"] = spec.Properties["size"]
	if _, again := k.ShortSchemas(); len(again.Properties) != 1 {
		t.Errorf("a change to the copy changed the Kind's: %v", again.Properties)
	}
	none, err := Compile("w", "w", layout.Files{KindFile: []byte("apiVersion: a.example.com/v1\nkind: A\n")})
	if err != nil {
		t.Fatal(err)
	}
	if spec, status := none.ShortSchemas(); spec != nil || status != nil {
		t.Errorf("no short schema: got %v, %v", spec, status)
	}
}
