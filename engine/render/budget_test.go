package render

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmplop/operator/internal/testsupport/fakelookup"
)

// TestBudgets: every way a folder (or a tenant's string passed to tpl) can
// make a render run, allocate or recurse without bound ends in a
// BudgetError naming the budget and the file, quickly and without
// allocating what it asked for.
func TestBudgets(t *testing.T) {
	// The cases that the clock must stop get a short deadline; the others
	// a long one, so that a loaded machine (make test runs packages in
	// parallel, with -race) never turns their refusal into a time one.
	small := Budget{Timeout: 2 * time.Second, MaxOutputBytes: 1 << 20, MaxManifests: 3, MaxCalls: 5000}
	const short = 300 * time.Millisecond
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: "
	// Loops that do nothing but loop: charged a few bytes an iteration,
	// with room for far more iterations than the deadline lets run.
	roomy := Budget{MaxOutputBytes: 1 << 40}
	cases := []struct {
		name   string
		files  map[string]string
		budget string // BudgetError.Budget
		detail string // fragment of the message
		room   Budget // merged into small
	}{
		{name: "loop bomb: until allocates nothing it cannot hold",
			files: map[string]string{"a.yaml": `{{ range until 200000000 }}x{{ end }}`}, budget: BudgetOutput, detail: "until 200000000"},
		{name: "loop that prints: output budget",
			files: map[string]string{"a.yaml": `{{ range until 100000 }}{{ range until 100 }}xxxxxxxxxx{{ end }}{{ end }}`}, budget: BudgetOutput, detail: "a.yaml"},
		{name: "silent nested loop: time budget through the range ticks",
			files: map[string]string{"a.yaml": `{{ range 100000 }}{{ range 100000 }}{{ end }}{{ end }}`}, budget: BudgetTime, room: roomy},
		{name: "range over an integer: time budget",
			files: map[string]string{"a.yaml": `{{ range 2000000000 }}{{ end }}`}, budget: BudgetTime, room: roomy},
		{name: "range over an integer: every iteration is charged",
			files: map[string]string{"a.yaml": `{{ range 2000000000 }}{{ $x := add1 1 }}{{ end }}`}, budget: BudgetOutput, detail: "range iterations (48 bytes each for 2 commands)",
			room: Budget{MaxOutputBytes: 64 << 10}},
		{name: "tpl bomb from the issue",
			files: map[string]string{"a.yaml": `{{ tpl "{{ tpl \"{{ range until 100000000 }}xx{{ end }}\" . }}" . }}`}, budget: BudgetOutput, detail: "until 100000000"},
		{name: "tpl of a string that loops",
			files: map[string]string{"a.yaml": `{{ tpl "{{ range 100000 }}{{ range 100000 }}{{ end }}{{ end }}" . }}`}, budget: BudgetTime, room: roomy},
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
			files: map[string]string{"a.yaml": `{{ printf "%0999999999d" 1 }}`}, budget: BudgetOutput, detail: "printf widths"},
		{name: "printf star width",
			files: map[string]string{"a.yaml": `{{ printf "%*d" 999999999 1 }}`}, budget: BudgetOutput, detail: "printf widths"},
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
			b := small.Merge(tc.room)
			if tc.budget == BudgetTime {
				b.Timeout = short
			}
			_, err := set.Children(t.Context(), Input{Budget: b})
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
			if limit := b.Timeout + b.grace() + 500*time.Millisecond; elapsed > limit {
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

// TestTenantAttacks: what a tenant can write in a spec field that a
// template passes to tpl, each stopped by the budget named, quickly and
// without allocating what it asked for.
func TestTenantAttacks(t *testing.T) {
	big := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "big", "namespace": "ns"},
		"data":     map[string]any{"blob": strings.Repeat("x", 100_000)}}
	// Few enough aliases for yaml.v2's own check: 90,000 values from 2 KB.
	bomb := "a: &a [" + strings.Repeat("x,", 999) + "x]\nb: [" + strings.Repeat("*a,", 89) + "*a]\n"
	alternation := strings.Repeat("(a|b)", 100) + "c"
	cases := []struct {
		name   string
		tpl    string // the tenant's string
		budget Budget // zero fields: 1 MiB, 1 s, 5000 calls
		want   string // BudgetError.Budget
		detail string // fragment of the message
	}{
		{name: "printf: 600 widths of a million behind an argument index",
			tpl: `{{ printf "` + strings.Repeat("%1000000[1]d", 600) + `" 1 }}`, want: BudgetOutput, detail: "printf widths and precisions of 600000000 over 600 verbs"},
		{name: "printf: a * width from a huge argument",
			tpl: `{{ printf "%*d" 999999999 1 }}`, want: BudgetOutput, detail: "printf widths"},
		{name: "printf: [n]* width",
			tpl: `{{ printf "` + strings.Repeat("%[2]*[1]d", 100) + `" 1 900000 }}`, want: BudgetOutput, detail: "printf widths"},
		{name: "printf: a width applies to every element of a list",
			tpl: `{{ printf "%100000v" (until 1000) }}`, want: BudgetOutput, detail: "printf"},
		{name: "printf: one string argument printed 600 times",
			tpl: `{{ $s := repeat 100000 "x" }}{{ printf "` + strings.Repeat("%[1]s", 600) + `" $s }}`, want: BudgetOutput, detail: "printf"},
		{name: "uniq of 300000 numbers",
			tpl: `{{ until 300000 | uniq }}`, budget: Budget{MaxOutputBytes: DefaultMaxOutputBytes}, want: BudgetOutput, detail: "uniq of 300000 elements"},
		{name: "uniq of lists compares every pair",
			tpl: `{{ chunk 1 (until 5000) | uniq }}`, budget: Budget{MaxOutputBytes: DefaultMaxOutputBytes}, want: BudgetWork, detail: "uniq: 12497500 comparisons"},
		{name: "without lists from lists",
			tpl: `{{ $l := chunk 1 (until 5000) }}{{ without $l ` + strings.Repeat("(list 1) ", 200) + ` }}`, want: BudgetWork, detail: "without"},
		{name: "split of a string held just within the budget",
			tpl: `{{ split "" (repeat 500000 "x") }}`, want: BudgetOutput, detail: "split of 500000 bytes into 500000 elements"},
		{name: "splitn",
			tpl: `{{ splitn "," 1000000 (repeat 200000 ",") }}`, want: BudgetOutput, detail: "splitn of 200000 bytes into 200001 elements"},
		{name: "regexSplit",
			tpl: `{{ regexSplit "" (repeat 300000 "x") -1 }}`, want: BudgetOutput, detail: "regexSplit of 300000 bytes: more than"},
		{name: "regexFindAll",
			tpl: `{{ regexFindAll "x" (repeat 300000 "x") -1 }}`, want: BudgetOutput, detail: "regexFindAll of 300000 bytes: more than"},
		{name: "a regex too large to run over a long string",
			tpl: `{{ regexMatch "` + alternation + `" (repeat 100000 "ab") }}`, want: BudgetWork, detail: "regexMatch: a program of about"},
		{name: "a regex that compiles to a huge program",
			tpl: `{{ regexMatch "` + strings.Repeat("a{1000}", 200) + `" "a" }}`, want: BudgetOutput, detail: "compiling a program"},
		{name: "a regex too long to parse",
			tpl: `{{ regexMatch (repeat 40000 "00$00") "" }}`, want: BudgetOutput, detail: "regexMatch: parsing an expression of 200000 bytes"},
		{name: "a regex of Unicode classes, each parsed into hundreds of ranges",
			tpl: `{{ regexMatch (repeat 1000 "\\pL") "" }}`, want: BudgetOutput, detail: "regexMatch: parsing an expression of 3000 bytes"},
		{name: "a hash of a long string in a loop copies it every time",
			tpl: `{{ $s := repeat 100000 "x" }}{{ range until 100000 }}{{ $x := sha256sum $s }}{{ end }}`, want: BudgetOutput, detail: "sha256sum"},
		{name: "round of a string in a loop formats it every time",
			tpl: `{{ $s := repeat 10000 " " }}{{ range until 100000 }}{{ $x := round $s 0 }}{{ end }}`, want: BudgetOutput, detail: "round of a value that is not a number"},
		{name: "toYaml of empty maps in a loop: a KiB each, printed in 5 bytes",
			tpl:    `{{ $l := list` + strings.Repeat(" dict", 500) + ` }}{{ range until 100000 }}{{ $x := toYaml $l }}{{ end }}`,
			budget: Budget{MaxOutputBytes: 4 << 20}, want: BudgetOutput, detail: "toYaml of"},
		{name: "append in a loop keeping every intermediate",
			tpl: `{{ $l := list }}{{ $all := list }}{{ range until 100000 }}{{ $l = append $l . }}{{ $all = append $all $l }}{{ end }}`, want: BudgetOutput, detail: "push on a list of"},
		{name: "prepend in a loop",
			tpl: `{{ $l := list }}{{ range until 100000 }}{{ $l = prepend $l . }}{{ end }}`, want: BudgetOutput, detail: "prepend on a list of"},
		{name: "set growth",
			tpl: `{{ $d := dict }}{{ range $i := 1000000 }}{{ $_ := set $d (toString $i) $i }}{{ end }}`, budget: Budget{MaxOutputBytes: 4 << 20}, want: BudgetOutput, detail: "set of a new key"},
		{name: "lookup of a large object many times",
			tpl: `{{ range until 100000 }}{{ $x := lookup "v1" "ConfigMap" "ns" "big" }}{{ end }}`, want: BudgetOutput, detail: "lookup: a copy of"},
		{name: "lookupSelect of large objects many times",
			tpl: `{{ range until 100000 }}{{ $x := lookupSelect "v1" "ConfigMap" "ns" "" }}{{ end }}`, want: BudgetOutput, detail: "lookupSelect"},
		{name: "deepCopy in a loop",
			tpl: `{{ $l := until 10000 }}{{ range until 100000 }}{{ $x := deepCopy $l }}{{ end }}`, want: BudgetOutput, detail: "deepCopy"},
		{name: "fromJson in a loop",
			tpl: `{{ $s := toJson (until 10000) }}{{ range until 100000 }}{{ $x := fromJson $s }}{{ end }}`, want: BudgetOutput, detail: "fromJson of"},
		{name: "a YAML alias bomb",
			tpl: `{{ fromYaml "` + strings.ReplaceAll(bomb, "\n", `\n`) + `" }}`, want: BudgetOutput, detail: "aliases expand to more than"},
		{name: "toYaml of a value nested deep",
			tpl: `{{ $d := dict }}{{ range until 3000 }}{{ $d = dict "k" $d }}{{ end }}{{ toYaml $d }}`, want: BudgetOutput, detail: "toYaml"},
		{name: "join with a large separator",
			tpl: `{{ join (repeat 100000 "x") (until 10000) }}`, want: BudgetOutput, detail: "join of 10000 elements"},
		{name: "sortAlpha in a loop",
			tpl: `{{ $l := until 10000 }}{{ range until 100000 }}{{ $x := sortAlpha $l }}{{ end }}`, want: BudgetOutput, detail: "sortAlpha"},
		{name: "keys in a loop",
			tpl: `{{ $d := dict }}{{ range until 5000 }}{{ $_ := set $d (toString .) 1 }}{{ end }}{{ range 100000 }}{{ $x := keys $d }}{{ end }}`, want: BudgetOutput, detail: "keys of 5000"},
		{name: "has of a list in a loop stops at the deadline",
			tpl: `{{ $l := chunk 1 (until 10000) }}{{ range 100000000 }}{{ $x := has (list -1) $l }}{{ end }}`, budget: Budget{Timeout: 200 * time.Millisecond}, want: BudgetTime},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := mustParse(t, map[string]string{"a.yaml": `{{ tpl .Spec.t . }}`})
			// The time budget is far from what a case takes alone (under
			// 0.7 s with -race), so that a loaded machine does not turn an
			// output or work refusal into a time one.
			b := Budget{Timeout: 3 * time.Second, MaxOutputBytes: 1 << 20, MaxCalls: 5000}.Merge(tc.budget)
			in := Input{Object: map[string]any{"spec": map[string]any{"t": tc.tpl}}, Budget: b, Lookup: &fakelookup.Objects{Items: []map[string]any{big}}}
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := set.Children(t.Context(), in)
			elapsed := time.Since(start)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			be, ok := errors.AsType[*BudgetError](err)
			if !ok || be.Budget != tc.want {
				t.Fatalf("err = %v, want a %s budget error", err, tc.want)
			}
			if m := be.RequeueMark(); !m.Terminal || (m.After > 0) != (tc.want == BudgetTime) {
				t.Errorf("RequeueMark() = %+v for %v: want terminal, tried again later only for time", m, err)
			}
			if re, ok := errors.AsType[*Error](err); !ok || re.Template != "a.yaml" {
				t.Errorf("err = %v: want an *Error naming a.yaml", err)
			}
			if !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("err = %v, want it to mention %q", err, tc.detail)
			}
			if limit := b.Timeout + b.grace() + 500*time.Millisecond; elapsed > limit {
				t.Errorf("took %s, want under %s", elapsed, limit)
			}
			if grown, limit := int64(after.TotalAlloc-before.TotalAlloc), 16*b.MaxOutputBytes+32<<20; grown > limit {
				t.Errorf("allocated %d MiB, want under %d MiB", grown>>20, limit>>20)
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
	res, err := set.Children(t.Context(), Input{Lookup: &fakelookup.Objects{}})
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
