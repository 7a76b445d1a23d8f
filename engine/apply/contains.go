package apply

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Contains reports whether live holds every value of desired: maps may have
// more keys (defaults, other managers' fields), lists must have the same
// length with each element contained. It is the test for drift, so a false
// "changed" only costs an apply that changes nothing, while a false
// "unchanged" would leave drift in place: when in doubt it says changed.
func Contains(live, desired any) bool {
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
