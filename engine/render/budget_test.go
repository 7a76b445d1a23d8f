package render

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBudgets: every way a folder (or a tenant's string passed to tpl) can
// make a render run, allocate or recurse without bound ends in a
// BudgetError naming the budget and the file, quickly and without
// allocating what it asked for.
func TestBudgets(t *testing.T) {
	small := Budget{Timeout: 300 * time.Millisecond, MaxOutputBytes: 1 << 20, MaxManifests: 3, MaxCalls: 5000}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: "
	cases := []struct {
		name   string
		files  map[string]string
		budget string // BudgetError.Budget
		detail string // fragment of the message
	}{
		{name: "loop bomb: until allocates nothing it cannot hold",
			files: map[string]string{"a.yaml": `{{ range until 200000000 }}x{{ end }}`}, budget: BudgetOutput, detail: "until 200000000"},
		{name: "loop that prints: output budget",
			files: map[string]string{"a.yaml": `{{ range until 100000 }}{{ range until 100 }}xxxxxxxxxx{{ end }}{{ end }}`}, budget: BudgetOutput, detail: "a.yaml"},
		{name: "silent nested loop: time budget through the range ticks",
			files: map[string]string{"a.yaml": `{{ range 100000 }}{{ range 100000 }}{{ end }}{{ end }}`}, budget: BudgetTime},
		{name: "range over an integer: time budget",
			files: map[string]string{"a.yaml": `{{ range 2000000000 }}{{ end }}`}, budget: BudgetTime},
		{name: "tpl bomb from the issue",
			files: map[string]string{"a.yaml": `{{ tpl "{{ tpl \"{{ range until 100000000 }}xx{{ end }}\" . }}" . }}`}, budget: BudgetOutput, detail: "until 100000000"},
		{name: "tpl of a string that loops",
			files: map[string]string{"a.yaml": `{{ tpl "{{ range 100000 }}{{ range 100000 }}{{ end }}{{ end }}" . }}`}, budget: BudgetTime},
		{name: "template recursion becomes include depth",
			files: map[string]string{"a.yaml": `{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}`}, budget: BudgetDepth, detail: `include "r"`},
		{name: "mutual include recursion counts total depth",
			files: map[string]string{"_h.tpl": `{{ define "a" }}{{ include "b" . }}{{ end }}{{ define "b" }}{{ include "a" . }}{{ end }}`, "a.yaml": `{{ include "a" . }}`}, budget: BudgetDepth},
		{name: "exponential fan-out: calls budget",
			files: map[string]string{"_h.tpl": `{{ define "f0" }}{{ end }}` + fanOut(20), "a.yaml": `{{ template "f20" . }}`}, budget: BudgetCalls},
		{name: "string doubling with cat",
			files: map[string]string{"a.yaml": `{{ $s := "ab" }}{{ range until 60 }}{{ $s = cat $s $s }}{{ end }}{{ $s }}`}, budget: BudgetOutput, detail: "cat"},
		{name: "string growth with b64enc",
			files: map[string]string{"a.yaml": `{{ $s := "ab" }}{{ range until 200 }}{{ $s = b64enc $s }}{{ end }}`}, budget: BudgetOutput, detail: "b64enc"},
		{name: "list doubling with concat",
			files: map[string]string{"a.yaml": `{{ $l := list 1 }}{{ range until 60 }}{{ $l = concat $l $l }}{{ end }}`}, budget: BudgetOutput, detail: "concat"},
		{name: "shared references printed",
			files: map[string]string{"a.yaml": `{{ $a := list 1 }}{{ range until 40 }}{{ $a = list $a $a }}{{ end }}{{ $a }}`}, budget: BudgetOutput, detail: "print of a value"},
		{name: "shared references serialized",
			files: map[string]string{"a.yaml": `{{ $a := dict }}{{ range until 40 }}{{ $a = dict "l" $a "r" $a }}{{ end }}{{ toJson $a }}`}, budget: BudgetOutput, detail: "toJson"},
		{name: "a map holding itself is not printed",
			files: map[string]string{"a.yaml": `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ $d }}`}, budget: BudgetOutput},
		{name: "a map holding itself is not merged",
			files: map[string]string{"a.yaml": `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ $x := merge (dict) $d }}`}, budget: BudgetOutput, detail: "merge"},
		{name: "a map holding itself is not deep-copied",
			files: map[string]string{"a.yaml": `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ $x := deepCopy $d }}`}, budget: BudgetOutput, detail: "deepCopy"},
		{name: "printf width",
			files: map[string]string{"a.yaml": `{{ printf "%0999999999d" 1 }}`}, budget: BudgetOutput, detail: "printf width"},
		{name: "printf star width",
			files: map[string]string{"a.yaml": `{{ printf "%*d" 999999999 1 }}`}, budget: BudgetOutput, detail: "printf width"},
		{name: "repeat",
			files: map[string]string{"a.yaml": `{{ repeat 1000000000 "ab" }}`}, budget: BudgetOutput, detail: "repeat"},
		{name: "indent",
			files: map[string]string{"a.yaml": `{{ "a\nb" | indent 999999999 }}`}, budget: BudgetOutput, detail: "indent"},
		{name: "replace with an empty old string",
			files: map[string]string{"a.yaml": `{{ $s := repeat 100000 "a" }}{{ replace "" (repeat 1000 "b") $s }}`}, budget: BudgetOutput, detail: "replace"},
		{name: "regexReplaceAll expanding every match",
			files: map[string]string{"a.yaml": `{{ $s := repeat 100000 "a" }}{{ regexReplaceAll "a" $s (repeat 100 "$0") }}`}, budget: BudgetOutput, detail: "regexReplaceAll"},
		{name: "randAlphaNum length",
			files: map[string]string{"a.yaml": `{{ randAlphaNum 1000000000 }}`}, budget: BudgetOutput, detail: "randAlphaNum"},
		{name: "seq length",
			files: map[string]string{"a.yaml": `{{ seq 1 1000000000 }}`}, budget: BudgetOutput, detail: "seq"},
		{name: "untilStep length",
			files: map[string]string{"a.yaml": `{{ range untilStep 0 1000000000 1 }}{{ end }}`}, budget: BudgetOutput, detail: "untilStep"},
		{name: "too many manifests",
			files: map[string]string{"a.yaml": `{{ range until 5 }}---` + "\n" + cm + `"{{ . }}"` + "\n{{ end }}"}, budget: BudgetManifests},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := mustParse(t, tc.files)
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := set.Children(t.Context(), Input{Budget: small})
			elapsed := time.Since(start)
			be, ok := errors.AsType[*BudgetError](err)
			if !ok || be.Budget != tc.budget {
				t.Fatalf("err = %v, want a %s budget error", err, tc.budget)
			}
			re, ok := errors.AsType[*Error](err)
			if !ok || re.Template == "" || !strings.Contains(err.Error(), "render budget exceeded: "+tc.budget) {
				t.Errorf("err = %v: want an *Error naming the file and the %s budget", err, tc.budget)
			}
			if tc.detail != "" && !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("err = %v, want it to mention %q", err, tc.detail)
			}
			if limit := small.Timeout + small.grace() + 500*time.Millisecond; elapsed > limit {
				t.Errorf("took %s, want under %s", elapsed, limit)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grown := int64(after.TotalAlloc - before.TotalAlloc); grown > 256<<20 {
				t.Errorf("allocated %d MiB in all, want the budget to stop it long before", grown>>20)
			}
		})
	}
}

func fanOut(levels int) string {
	var b strings.Builder
	for i := 1; i <= levels; i++ {
		b.WriteString(`{{ define "f` + itoa(i) + `" }}{{ template "f` + itoa(i-1) + `" . }}{{ template "f` + itoa(i-1) + `" . }}{{ end }}`)
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestGuardsKeepOutput: the rewritten trees print what text/template
// prints: template and block calls, values of every kind, missing keys.
func TestGuardsKeepOutput(t *testing.T) {
	set := mustParse(t, map[string]string{
		"_h.tpl": `{{ define "name" }}n-{{ .Name }}{{ end }}`,
		"status.yaml": `a: {{ template "name" . }}
b: {{ block "blk" . }}b-{{ .Name }}{{ end }}
c: "{{ .Spec.missing }}"
d: "{{ .Spec.list }}"
e: {{ list 1 2 | toJson }}
f: {{ range $i, $v := .Spec.list }}{{ $i }}{{ $v }}{{ end }}
g: {{ template "none-arg" }}
{{- define "none-arg" }} {{ . }}{{ end }}
h: {{ 3 }}
`})
	res, err := set.Status(t.Context(), Input{Object: map[string]any{
		"metadata": map[string]any{"name": "o"},
		"spec":     map[string]any{"list": []any{"x", "y"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": "n-o", "b": "b-o", "c": "", "d": "[x y]", "e": []any{int64(1), int64(2)}, "f": "0x1y", "g": nil, "h": int64(3)}
	for k, v := range want {
		got := res.Status[k]
		if gs, ok := got.([]any); ok {
			if len(gs) != 2 || gs[0] != int64(1) {
				t.Errorf("%s = %#v, want %#v", k, got, v)
			}
			continue
		}
		if got != v {
			t.Errorf("%s = %#v, want %#v", k, got, v)
		}
	}
}

// TestAbandon: a render stuck in one long function call, which no guard
// can interrupt, is abandoned after its deadline plus the grace period; the
// caller is freed at once, the set counts it until it ends, and past
// maxRunaway the set refuses new renders instead of piling them up.
func TestAbandon(t *testing.T) {
	set := mustParse(t, map[string]string{"a.yaml": `{{ $k := genPrivateKey "rsa" }}{{ $k := genPrivateKey "rsa" }}{{ $k := genPrivateKey "rsa" }}`})
	b := Budget{Timeout: time.Millisecond}
	for i := range maxRunaway {
		start := time.Now()
		_, err := set.Children(t.Context(), Input{Budget: b})
		be, ok := errors.AsType[*BudgetError](err)
		if !ok || be.Budget != BudgetTime || !strings.Contains(err.Error(), "abandoned") {
			// A fast machine may finish in time; then nothing was abandoned.
			if err == nil || ok && be.Budget == BudgetTime {
				t.Skipf("render %d finished within its grace period (%v): nothing to abandon on this machine", i, err)
			}
			t.Fatalf("err = %v, want an abandoned time budget error", err)
		}
		if d := time.Since(start); d > 200*time.Millisecond {
			t.Errorf("abandoning took %s", d)
		}
	}
	if set.Runaway() != maxRunaway {
		t.Fatalf("Runaway() = %d, want %d", set.Runaway(), maxRunaway)
	}
	_, err := set.Children(t.Context(), Input{Budget: b})
	if be, ok := errors.AsType[*BudgetError](err); !ok || be.Budget != BudgetDegraded || !be.Transient() {
		t.Fatalf("err = %v, want the degraded refusal", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for set.Runaway() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if set.Runaway() != 0 {
		t.Fatalf("Runaway() = %d after the renders ended", set.Runaway())
	}
}

// TestCancel: a canceled context stops a render at its next check.
func TestCancel(t *testing.T) {
	set := mustParse(t, map[string]string{"a.yaml": `{{ range 2000000000 }}{{ end }}`})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := set.Children(ctx, Input{Budget: Budget{Timeout: time.Minute}})
	if be, ok := errors.AsType[*BudgetError](err); !ok || be.Budget != BudgetCanceled {
		t.Fatalf("err = %v, want canceled", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s after cancel", d)
	}
}

// TestResultReports: what the deletion guard and the loop detection read.
func TestResultReports(t *testing.T) {
	set := mustParse(t, map[string]string{
		"a.yaml": `{{ range (lookup "v1" "Node" "" "").items }}x{{ end }}`,
		"b.yaml": `{{ $x := randAlphaNum 5 }}{{ $y := uuidv4 }}`,
		"c.yaml": `{{ range (lookup "v1" "Node" "" "").items }}x{{ end }}`,
	})
	res, err := set.Children(t.Context(), Input{Lookup: &fakeLookup{}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.EmptyLists, ",") != "a.yaml,c.yaml" {
		t.Errorf("EmptyLists = %v", res.EmptyLists)
	}
	if got := res.Nondeterministic["b.yaml"]; strings.Join(got, ",") != "randAlphaNum,uuidv4" {
		t.Errorf("Nondeterministic = %v", res.Nondeterministic)
	}
}
