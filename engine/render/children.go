package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// childrenData builds status.yaml's .Children from Input.Children: a copy
// of every child (map[string]any at every level, as Helm's values, so that
// sprig's map functions work on it: dig "Deployment" .Name "status" "x" 0
// .Children), keyed by what each child says it is, whatever the caller
// keyed it by:
//
//   - "<Kind>.<group>" always ("<Kind>" for the core group), so that two
//     kinds of one name in different groups never collide;
//   - "<Kind>" too when no other group among the children has a kind of
//     that name: what every template written before groups were keyed
//     reads (.Children.Deployment). When two groups share it, the bare
//     key is the core group's, or absent.
//
// A child without apiVersion and kind (a test's fixture) stays under the
// caller's key. Both keys of one kind hold the same map.
func childrenData(in map[string]map[string]any) (map[string]any, error) {
	out := make(map[string]any, 2*len(in))
	groups := map[string]map[string]bool{} // Kind -> groups
	for _, key := range slices.Sorted(maps.Keys(in)) {
		byName := in[key]
		for _, childName := range slices.Sorted(maps.Keys(byName)) {
			c, err := childContent(byName[childName])
			if err == nil {
				c, err = copyJSONMap(c)
			}
			if err != nil {
				return nil, &Error{Message: fmt.Sprintf("input child %s %s: %v", key, childName, err), err: err}
			}
			qualified := key
			if kind, _ := c["kind"].(string); kind != "" {
				group := ""
				if apiVersion, _ := c["apiVersion"].(string); strings.Contains(apiVersion, "/") {
					group = apiVersion[:strings.Index(apiVersion, "/")]
				}
				qualified = kind
				if group != "" {
					qualified = kind + "." + group
				}
				if groups[kind] == nil {
					groups[kind] = map[string]bool{}
				}
				groups[kind][group] = true
			}
			m, _ := out[qualified].(map[string]any)
			if m == nil {
				m = map[string]any{}
				out[qualified] = m
			}
			m[childName] = c
		}
	}
	for kind, gs := range groups {
		if len(gs) == 1 {
			for g := range gs {
				if g != "" {
					out[kind] = out[kind+"."+g]
				}
			}
		}
	}
	return out, nil
}
