package apply

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Contains reports whether live holds every value of desired: maps may have
// more keys (defaults, other managers' fields), lists must have the same
// length with each element contained. It is the test for drift, so a false
// "changed" only costs an apply that changes nothing, while a false
// "unchanged" would leave drift in place: when in doubt it says changed.
func Contains(live, desired any) bool {
	if live == nil && isEmpty(desired) {
		return true // an empty list or map the API server returns as null (a ClusterRole's rules: [])
	}
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, dv := range d {
			lv, ok := l[k]
			if !ok {
				if isEmpty(dv) {
					continue // the API server drops empty values
				}
				return false
			}
			if !Contains(lv, dv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(d) {
			return false
		}
		for i := range d {
			if !Contains(l[i], d[i]) {
				return false
			}
		}
		return true
	case string:
		if l, ok := live.(string); ok && l == d {
			return true
		}
		// Quantities come back canonical ("0.5" -> "500m").
		return sameQuantity(live, d)
	default:
		return equality.Semantic.DeepEqual(live, desired)
	}
}

// DriftPaths returns the JSON pointers (RFC 6901) of the values of desired
// that live does not hold, by the rules of Contains: a map key missing or
// changed, a list of another length (the list's own pointer), a scalar
// changed. Empty when Contains(live, desired); sorted, so that a report of
// them is the same from reconcile to reconcile.
func DriftPaths(live, desired any) []string {
	var out []string
	driftPaths(live, desired, "", &out)
	return out
}

func driftPaths(live, desired any, at string, out *[]string) {
	if live == nil && isEmpty(desired) {
		return
	}
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			*out = append(*out, pointerOrRoot(at))
			return
		}
		for _, k := range slices.Sorted(maps.Keys(d)) {
			dv := d[k]
			p := at + "/" + escapeToken(k)
			lv, ok := l[k]
			if !ok {
				if !isEmpty(dv) {
					*out = append(*out, p)
				}
				continue
			}
			driftPaths(lv, dv, p, out)
		}
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(d) {
			*out = append(*out, pointerOrRoot(at))
			return
		}
		for i := range d {
			driftPaths(l[i], d[i], at+"/"+strconv.Itoa(i), out)
		}
	default:
		if !Contains(live, desired) {
			*out = append(*out, pointerOrRoot(at))
		}
	}
}

// pointerOrRoot is at, or "/" for the whole document: a report names a
// path, never the empty string.
func pointerOrRoot(at string) string {
	if at == "" {
		return "/"
	}
	return at
}

// escapeToken escapes a key as a JSON pointer's token: "~" as "~0", "/" as
// "~1" (the order matters).
func escapeToken(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

func sameQuantity(live any, desired string) bool {
	ls, ok := live.(string)
	if !ok {
		return false
	}
	dq, err1 := resource.ParseQuantity(desired)
	lq, err2 := resource.ParseQuantity(ls)
	return err1 == nil && err2 == nil && dq.Cmp(lq) == 0
}
