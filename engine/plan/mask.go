package plan

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

// maskSecrets returns copies of a Secret's two sides whose data and
// stringData values are masked, as kubectl diff masks them: "***" where a
// value is the same on both sides, "*** (before)" and "*** (after)" where
// it changes. A plan's diff goes to CI logs, read by more people than
// may read the Secret. Anything else is returned as it is.
func maskSecrets(kind, apiVersion string, before, after map[string]any) (map[string]any, map[string]any) {
	if kind != "Secret" || apiVersion != "v1" {
		return before, after
	}
	if before != nil {
		before = runtime.DeepCopyJSON(before)
	}
	if after != nil {
		after = runtime.DeepCopyJSON(after)
	}
	for _, field := range []string{"data", "stringData"} {
		b, _ := stringMap(before, field)
		a, _ := stringMap(after, field)
		for k, bv := range b {
			av, ok := a[k]
			switch {
			case ok && equality.Semantic.DeepEqual(av, bv):
				b[k], a[k] = "***", "***"
			case ok:
				b[k], a[k] = "*** (before)", "*** (after)"
			default:
				b[k] = "*** (before)"
			}
		}
		for k := range a {
			if _, ok := b[k]; !ok {
				a[k] = "*** (after)"
			}
		}
	}
	return before, after
}

func stringMap(obj map[string]any, field string) (map[string]any, bool) {
	if obj == nil {
		return nil, false
	}
	m, ok := obj[field].(map[string]any)
	return m, ok
}
