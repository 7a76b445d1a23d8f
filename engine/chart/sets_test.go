package chart

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render"
)

// toggled is a chart of n subcharts, each enabled by its condition.
func toggled(t *testing.T, n int) *Chart {
	t.Helper()
	var deps strings.Builder
	files := map[string][]byte{"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: top\n")}
	for i := range n {
		fmt.Fprintf(&deps, "  - name: s%d\n    version: 0.1.0\n    condition: s%d.enabled\n", i, i)
		files[fmt.Sprintf("charts/s%d/Chart.yaml", i)] = fmt.Appendf(nil, "apiVersion: v2\nname: s%d\nversion: 0.1.0\n", i)
		files[fmt.Sprintf("charts/s%d/templates/cm.yaml", i)] = fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s%d\n", i)
	}
	files["Chart.yaml"] = []byte("apiVersion: v2\nname: top\nversion: 0.1.0\ndependencies:\n" + deps.String())
	c, err := Load(layout.Files(files), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// combo is an object whose spec enables the subcharts of mask's bits.
func combo(n, mask int) map[string]any {
	spec := map[string]any{}
	for i := range n {
		spec[fmt.Sprintf("s%d", i)] = map[string]any{"enabled": mask&(1<<i) != 0}
	}
	return map[string]any{"metadata": map[string]any{"name": "o", "namespace": "ns"}, "spec": spec}
}

// TestSetsCacheEvictsLeastRecentlyUsed: the template sets of the
// combinations of enabled subcharts are kept up to maxSets, the least
// recently used going first: a combination used again is not parsed
// again, one more past the bound is kept in place of the stalest, and a
// combination in use is never the one to go.
func TestSetsCacheEvictsLeastRecentlyUsed(t *testing.T) {
	const n = 6 // 63 combinations with one subchart disabled or more
	c := toggled(t, n)
	set := func(mask int) *render.Set {
		t.Helper()
		s, _, _, err := c.Dots(t.Context(), combo(n, mask), Cluster{}, render.Budget{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := map[int]*render.Set{}
	for mask := range maxSets {
		first[mask] = set(mask)
	}
	if got := c.sets.len(); got != maxSets {
		t.Fatalf("%d sets kept, want %d", got, maxSets)
	}
	// Used again: the same set, not parsed again.
	if set(0) != first[0] {
		t.Error("combination 0 was parsed again while it was kept")
	}
	// One more: kept in place of the least recently used (1; 0 was just
	// used), and not parsed again when used again.
	next := set(maxSets)
	if set(maxSets) != next {
		t.Errorf("combination %d was parsed at each use: past %d combinations, no new one was kept", maxSets, maxSets)
	}
	if set(0) != first[0] {
		t.Error("combination 0, used recently, was evicted")
	}
	if got := c.sets.len(); got != maxSets {
		t.Errorf("%d sets kept, want %d", got, maxSets)
	}
	if set(1) == first[1] {
		t.Error("combination 1, the least recently used, was kept past the bound")
	}
	// Every subchart enabled: the chart's own set, never cached.
	if set(1<<n-1) != c.Set {
		t.Error("every subchart enabled: not the chart's set")
	}
}
