package convert

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// keptPrefix starts the name of every kept annotation.
const keptPrefix = "operator.tmplop.io/kept-"

// MaxKept is the most a kept annotation may hold, in bytes: the API
// server takes 256 KiB of annotations in all, and what a version cannot
// hold of an object is meant to be a few fields, not the object.
const MaxKept = 64 << 10

// KeptAnnotation is the annotation of an object at another version that
// keeps what version held and the object's version cannot:
// operator.tmplop.io/kept-<version>.
func KeptAnnotation(version string) string { return keptPrefix + version }

// kept is a kept annotation's value: what turns the back conversion's
// output into the object it came from.
type kept struct {
	// Set are the values at these JSON Pointers (RFC 6901).
	Set map[string]any `json:"set,omitempty"`
	// Absent are the pointers to delete, sorted.
	Absent []string `json:"absent,omitempty"`
}

// diff is the kept annotation that turns got into want (both objects
// seen through comparable), "" when they are equal.
func diff(want, got map[string]any) (string, error) {
	var k kept
	walk("", want, got, &k)
	if k.Set == nil && k.Absent == nil {
		return "", nil
	}
	slices.Sort(k.Absent)
	data, err := json.Marshal(k) // map keys sorted
	if err != nil {
		return "", fmt.Errorf("keep what the conversion loses: %w", err)
	}
	return string(data), nil
}

// walk records in k what differs between want and got at pointer at:
// mappings are compared key by key, anything else whole.
func walk(at string, want, got map[string]any, k *kept) {
	for _, key := range slices.Sorted(maps.Keys(want)) {
		p := at + "/" + escape(key)
		g, ok := got[key]
		if !ok {
			k.set(p, want[key])
			continue
		}
		wm, wok := want[key].(map[string]any)
		gm, gok := g.(map[string]any)
		switch {
		case wok && gok:
			walk(p, wm, gm, k)
		case !equal(want[key], g):
			k.set(p, want[key])
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			k.Absent = append(k.Absent, at+"/"+escape(key))
		}
	}
}

func (k *kept) set(pointer string, v any) {
	if k.Set == nil {
		k.Set = map[string]any{}
	}
	k.Set[pointer] = v
}

// applyKept applies the kept annotation's value data to obj: the absent
// pointers deleted, then the set ones set, making the mappings on their
// way. It is best effort, and never fails: whoever may write the object
// may write the annotation, and one object that does not convert fails
// every list of the kind at that version (a ConversionReview is all or
// nothing). So a value that is not what diff writes is ignored, and so is
// a pointer diff never writes (apiVersion, kind, metadata but labels and
// annotations, a kept annotation): metadata stays the API server's rule.
// A pointer through a value that is no longer a mapping (the object
// changed since) is skipped: the object's own value wins.
func applyKept(obj map[string]any, data any) {
	s, ok := data.(string)
	if !ok {
		return
	}
	var raw map[string]any
	if err := utiljson.Unmarshal([]byte(s), &raw); err != nil {
		return
	}
	set, _ := raw["set"].(map[string]any)
	absent, _ := raw["absent"].([]any)
	for _, a := range absent {
		p, _ := a.(string)
		keys, ok := keptPointer(p)
		if !ok {
			continue
		}
		if parent := reach(obj, keys[:len(keys)-1], false); parent != nil {
			delete(parent, keys[len(keys)-1])
		}
	}
	for _, p := range slices.Sorted(maps.Keys(set)) {
		keys, ok := keptPointer(p)
		if !ok || !keptValue(keys, set[p]) {
			continue
		}
		if parent := reach(obj, keys[:len(keys)-1], true); parent != nil {
			parent[keys[len(keys)-1]] = set[p]
		}
	}
}

// keptPointer splits a pointer of a kept annotation into its keys, false
// for one diff never writes. The kept annotations among the annotations
// it sets are replaced after (setKept).
func keptPointer(p string) ([]string, bool) {
	keys, err := unescape(p)
	if err != nil {
		return nil, false
	}
	switch keys[0] {
	case "apiVersion", "kind":
		return nil, false
	case "metadata":
		if len(keys) < 2 || len(keys) > 3 || keys[1] != "labels" && keys[1] != "annotations" {
			return nil, false
		}
	}
	return keys, true
}

// keptValue reports whether v may be set at keys: labels and annotations
// are strings, as the API server requires.
func keptValue(keys []string, v any) bool {
	if keys[0] != "metadata" {
		return true
	}
	if len(keys) == 3 {
		_, ok := v.(string)
		return ok
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, s := range m {
		if _, ok := s.(string); !ok {
			return false
		}
	}
	return true
}

// reach returns the mapping of obj at keys, nil when there is none (and
// create is false, or a value on the way is not a mapping).
func reach(obj map[string]any, keys []string, create bool) map[string]any {
	cur := obj
	for _, key := range keys {
		v, ok := cur[key]
		if !ok || v == nil {
			if !create {
				return nil
			}
			next := map[string]any{}
			cur[key] = next
			cur = next
			continue
		}
		next, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}

var (
	escaper   = strings.NewReplacer("~", "~0", "/", "~1")
	unescaper = strings.NewReplacer("~1", "/", "~0", "~")
)

func escape(key string) string { return escaper.Replace(key) }

// unescape splits a JSON Pointer into its keys; it must name a field, not
// the whole document.
func unescape(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("pointer %q: want /a/b", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = unescaper.Replace(s)
	}
	return parts, nil
}

// equal compares unstructured values, numbers by value whatever their Go
// type: an int64 decoded by one reader is a float64 of another's.
func equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

// number is v as a float64 when it is a number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, !math.IsNaN(n)
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		return f, err == nil
	}
	return 0, false
}

// deepCopyMap copies unstructured content.
func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopy(v)
	}
	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return deepCopyMap(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = deepCopy(x[i])
		}
		return out
	}
	return v
}
