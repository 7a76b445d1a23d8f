package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// serverSet are the metadata fields the API server writes and no template
// renders: a diff that showed them would show every apply as a change.
var serverSet = []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"}

// Clean returns a deep copy of obj without the fields the API server sets
// (metadata.managedFields, resourceVersion, generation, uid,
// creationTimestamp) and without status, which a child's apply never
// writes: what a plan compares.
func Clean(obj map[string]any) map[string]any {
	if obj == nil {
		return nil
	}
	out := runtime.DeepCopyJSON(obj)
	delete(out, "status")
	if md, ok := out["metadata"].(map[string]any); ok {
		for _, f := range serverSet {
			delete(md, f)
		}
	}
	return out
}

// Paths returns the field paths at which before and after differ, sorted:
// a map's key is ".key" (a key with dots or slashes, as labels and
// annotations have, is ["key"]), a list's element "[i]" when both lists
// have the same length, else the list itself. A field on one side only is
// a path too.
func Paths(before, after map[string]any) []string {
	var out []string
	walk("", before, after, &out)
	slices.Sort(out)
	return out
}

func walk(path string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			av, ina := am[k]
			bv, inb := bm[k]
			p := path + segment(k)
			if ina != inb {
				*out = append(*out, p)
				continue
			}
			walk(p, av, bv, out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			walk(path+"["+strconv.Itoa(i)+"]", al[i], bl[i], out)
		}
		return
	}
	if !equality.Semantic.DeepEqual(a, b) {
		if path == "" {
			path = "."
		}
		*out = append(*out, path)
	}
}

func segment(k string) string {
	if strings.ContainsAny(k, "./[]\"") {
		return "[" + strconv.Quote(k) + "]"
	}
	return "." + k
}

// Unified returns a unified diff (three lines of context) of the YAML of
// before and after, labelled a/name and b/name; "" when they are the same.
// A nil side is an absent object (/dev/null).
func Unified(name string, before, after map[string]any) (string, error) {
	a, err := yamlLines(before)
	if err != nil {
		return "", err
	}
	b, err := yamlLines(after)
	if err != nil {
		return "", err
	}
	from, to := "a/"+name, "b/"+name
	if before == nil {
		from = "/dev/null"
	}
	if after == nil {
		to = "/dev/null"
	}
	return unified(from, to, a, b), nil
}

func yamlLines(obj map[string]any) ([]string, error) {
	if obj == nil {
		return nil, nil
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	s := string(data)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	lines := strings.SplitAfter(s, "\n")
	return lines[:len(lines)-1], nil // after the last newline: ""
}

// op is one line of an edit script: ' ' kept, '-' removed, '+' added.
type op struct {
	kind byte
	line string
}

// script is the shortest edit script from a to b by the longest common
// subsequence. Objects are at most a few hundred lines: the quadratic
// table is small, and simple beats Myers' here.
func script(a, b []string) []op {
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []op
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, op{' ', a[i]})
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, op{'-', a[i]})
			i++
		default:
			out = append(out, op{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, op{'-', a[i]})
	}
	for ; j < m; j++ {
		out = append(out, op{'+', b[j]})
	}
	return out
}

const contextLines = 3

func unified(from, to string, a, b []string) string {
	ops := script(a, b)
	var sb strings.Builder
	changed := false
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		// A hunk: from context lines before the first change to context
		// lines after the last change closer than 2*contextLines to the next.
		start := max(0, k-contextLines)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*contextLines {
				end = min(len(ops), end+contextLines)
				break
			}
			end = run
		}
		if !changed {
			fmt.Fprintf(&sb, "--- %s\n+++ %s\n", from, to)
			changed = true
		}
		aStart, bStart := 1, 1
		for _, o := range ops[:start] {
			if o.kind != '+' {
				aStart++
			}
			if o.kind != '-' {
				bStart++
			}
		}
		aLen, bLen := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aLen++
			}
			if o.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, o := range ops[start:end] {
			sb.WriteByte(o.kind)
			sb.WriteString(o.line)
		}
		k = end
	}
	return sb.String()
}

// hunkRange is a hunk header's range, as diff -u writes it: an empty
// range starts at the line before it.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return strconv.Itoa(start-1) + ",0"
	case 1:
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(n)
}
