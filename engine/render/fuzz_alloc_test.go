package render

import (
	"fmt"
	"reflect"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmplop/operator/internal/testsupport/fakelookup"
)

// FuzzFuncAlloc: templates composed of the real functions, whatever they
// do, allocate at most a fixed multiple of the output budget: a budget
// error is a fine outcome, an allocation the budget did not see is the bug.
//
// The input is a program of statements separated by ';', each a function
// and its arguments, so that mutations stay compositions of functions
// rather than parse errors:
//
//	until 300000; uniq $0          $k is the result of statement k
//	list; *1000 append $$ i        *N runs it N times, $$ being its own result, i the index
//	+ append $0 $1                 + joins the loop before it
//	fromYaml "a: &x [1]\nb: *x"    quoted arguments may hold spaces
//	!$1                            prints a result
//
// A name that is not a function picks one by its hash; arguments missing
// or of the wrong type are replaced by a value of the right one.
func FuzzFuncAlloc(f *testing.F) {
	// The seed corpus, testdata/fuzz/FuzzFuncAlloc, holds the attacks of
	// TestTenantAttacks as programs.
	funcs, _ := parseFuncs()
	var names []string
	for name := range funcs {
		if !slowFuncs[name] && !strings.HasPrefix(name, "__") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	big := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "big", "namespace": "ns"},
		"data":     map[string]any{"blob": strings.Repeat("x", 10_000)}}
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	f.Fuzz(func(t *testing.T, program []byte) {
		body := composeTemplate(string(program), funcs, names)
		set, err := Parse(map[string]string{
			"_body.tpl": `{{ define "body" }}` + body + `{{ end }}`,
			"a.yaml":    `{{ $_ := include "body" . }}`,
		})
		if err != nil {
			return // text/template refused a composition; the parser is not under test
		}
		b := Budget{Timeout: time.Second, MaxOutputBytes: 64 << 10, MaxCalls: 10_000}
		in := Input{Budget: b, Now: time.Unix(0, 0), Lookup: &fakelookup.Objects{Items: []map[string]any{big}},
			Object: map[string]any{"metadata": map[string]any{"name": "o"}, "spec": map[string]any{"t": "{{ . }}", "list": []any{int64(1), "a"}}}}
		metrics.Read(sample)
		before := sample[0].Value.Uint64()
		_, err = set.Children(t.Context(), in)
		metrics.Read(sample)
		allocated := int64(sample[0].Value.Uint64() - before)
		if debugFuzz {
			fmt.Printf("%6d KiB %v\n    %s\n", allocated>>10, err, body)
		}
		limit := allocMultiple*b.MaxOutputBytes + allocOverhead
		if raceDetector {
			limit *= 4
		}
		if allocated > limit {
			t.Fatalf("allocated %d KiB with an output budget of %d KiB (limit %d KiB), err %v\ntemplate: %s",
				allocated>>10, b.MaxOutputBytes>>10, limit>>10, err, body)
		}
	})
}

// What a render may allocate: a multiple of its output budget (what is
// charged is close to what is allocated, within a few times for decoding,
// copying, escaping), and what setting up a render costs (an instance of
// the templates, the functions bound to it).
var debugFuzz = false

const (
	allocMultiple = 16
	allocOverhead = 2 << 20
)

// slowFuncs are left out of the fuzzed set: they cost their time and
// memory by nature, a fixed amount per call (see reviewed).
var slowFuncs = map[string]bool{
	"genPrivateKey": true, "genCA": true, "genCAWithKey": true, "genSelfSignedCert": true, "genSelfSignedCertWithKey": true,
	"genSignedCert": true, "genSignedCertWithKey": true, "derivePassword": true, "bcrypt": true, "htpasswd": true,
}

// composeTemplate turns a program (see FuzzFuncAlloc) into template text.
// The variables of a loop are declared before it, so that what the loop
// builds is visible after it.
func composeTemplate(program string, funcs map[string]any, names []string) string {
	var out, decl, body strings.Builder
	loopN := 0
	flush := func() {
		if loopN > 0 {
			fmt.Fprintf(&out, "%s{{ range $i := %d }}%s{{ end }}", decl.String(), loopN, body.String())
			decl.Reset()
			body.Reset()
			loopN = 0
		}
	}
	var types []reflect.Type // result type of each statement
	for k, stmt := range strings.Split(program, ";") {
		if k >= 12 {
			break
		}
		fields := tokens(stmt)
		if len(fields) == 0 {
			continue
		}
		loop, join, show := 0, false, false
		switch f := fields[0]; {
		case strings.HasPrefix(f, "*"):
			loop, _ = strconv.Atoi(f[1:])
			loop, fields = min(max(loop, 1), 1_000_000), fields[1:]
		case f == "+":
			join, fields = loopN > 0, fields[1:]
		case strings.HasPrefix(f, "!"):
			show, fields[0] = true, f[1:]
		}
		if len(fields) == 0 || fields[0] == "" {
			continue
		}
		if show && strings.HasPrefix(fields[0], "$") {
			if n, err := strconv.Atoi(fields[0][1:]); err == nil && n >= 0 && n < len(types) {
				flush()
				fmt.Fprintf(&out, "{{ $v%d }}", n)
			}
			continue
		}
		name := fields[0]
		if _, ok := funcs[name]; !ok || slowFuncs[name] || strings.HasPrefix(name, "__") {
			name = names[hash(name)%len(names)]
		}
		typ := reflect.TypeOf(funcs[name])
		v := len(types)
		declare := fmt.Sprintf("{{ $v%d := %s %s }}", v, name, composeArgs(typ, fields[1:], types, v, false))
		assign := fmt.Sprintf("{{ $v%d = %s %s }}", v, name, composeArgs(typ, fields[1:], types, v, true))
		switch {
		case loop > 0:
			flush()
			loopN = loop
			decl.WriteString(declare)
			body.WriteString(assign)
		case join:
			decl.WriteString(declare)
			body.WriteString(assign)
		default:
			flush()
			out.WriteString(declare)
		}
		if show {
			flush()
			fmt.Fprintf(&out, "{{ $v%d }}", v)
		}
		types = append(types, typ.Out(0))
	}
	flush()
	return out.String()
}

// composeArgs writes the arguments of a function of type typ from fields,
// with values of the right type where they are missing or do not fit.
func composeArgs(typ reflect.Type, fields []string, vars []reflect.Type, self int, looping bool) string {
	n := typ.NumIn()
	if typ.IsVariadic() {
		n = max(typ.NumIn()-1, len(fields))
	}
	args := make([]string, 0, n)
	for i := range n {
		pt := typ.In(min(i, typ.NumIn()-1))
		if typ.IsVariadic() && i >= typ.NumIn()-1 {
			pt = pt.Elem()
		}
		field := ""
		if i < len(fields) {
			field = fields[i]
		}
		args = append(args, composeArg(pt, field, vars, self, looping))
	}
	return strings.Join(args, " ")
}

func composeArg(pt reflect.Type, field string, vars []reflect.Type, self int, looping bool) string {
	fits := func(t reflect.Type) bool {
		return pt.Kind() == reflect.Interface || t == pt || t.Kind() == reflect.Interface
	}
	if !looping && (field == "$$" || field == "i") {
		field = "" // not declared yet: a value of the right type
	}
	switch {
	case field == "$$" && looping:
		return fmt.Sprintf("$v%d", self)
	case field == "i" && looping && (pt.Kind() == reflect.Int || pt.Kind() == reflect.Interface):
		return "$i"
	case field == "i" && looping && pt.Kind() == reflect.String:
		return "(toString $i)"
	case field == ".Spec" && (pt.Kind() == reflect.Interface || pt.Kind() == reflect.Map):
		return "$.Spec"
	case strings.HasPrefix(field, "$"):
		if k, err := strconv.Atoi(field[1:]); err == nil && k >= 0 && k < len(vars) && fits(vars[k]) {
			return fmt.Sprintf("$v%d", k)
		}
	}
	switch pt.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint32:
		if n, err := strconv.Atoi(field); err == nil {
			return strconv.Itoa(n)
		}
		return strconv.Itoa([]int{0, 1, 2, 3, 10, 100}[hash(field)%6])
	case reflect.Float64:
		return "1.5"
	case reflect.Bool:
		return strconv.FormatBool(field == "true")
	case reflect.String:
		return strconv.Quote(field)
	case reflect.Map:
		return `(dict "a" 1 "b" (list 1 "x"))`
	case reflect.Slice:
		if pt.Elem().Kind() == reflect.Interface {
			return `(list 1 "a" (dict "b" 2))`
		}
	case reflect.Interface:
		if n, err := strconv.Atoi(field); err == nil {
			return strconv.Itoa(n)
		}
		if field == "" {
			return `(list 1 "a" (dict "b" 2))`
		}
		return strconv.Quote(field)
	case reflect.Struct:
		if pt == timeType {
			return "now"
		}
	}
	return "nil"
}

// tokens splits a statement at spaces, keeping Go-quoted strings whole.
func tokens(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '"' {
			if q, err := strconv.QuotedPrefix(s); err == nil {
				u, _ := strconv.Unquote(q)
				out, s = append(out, u), s[len(q):]
				continue
			}
		}
		end := strings.IndexByte(s, ' ')
		if end < 0 {
			end = len(s)
		}
		out, s = append(out, s[:end]), s[end:]
	}
	return out
}

func hash(s string) int {
	h := 0
	for _, c := range []byte(s) {
		h = h*31 + int(c)
	}
	return max(h, -h) & 0x7fffffff
}
