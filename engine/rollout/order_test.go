package rollout

import (
	"fmt"
	"slices"
	"testing"
)

// ordered is n objects default/o-<i> and their positions, in the order
// they move (canary picks the canaries).
func ordered(n int, canary func(i int) bool) ([]Object, []string) {
	objs := make([]Object, n)
	for i := range objs {
		objs[i] = Object{Namespace: "default", Name: fmt.Sprintf("o-%d", i)}
		if canary != nil && canary(i) {
			objs[i].Labels = map[string]string{"tier": "canary"}
		}
	}
	spec := canarySpec()
	slices.SortFunc(objs, func(a, b Object) int {
		pa, pb := a.Position(spec), b.Position(spec)
		switch {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return 0
	})
	pos := make([]string, n)
	for i := range objs {
		pos[i] = objs[i].Position(spec)
	}
	return objs, pos
}

func canarySpec() *Spec {
	var s Spec
	if err := s.UnmarshalJSON([]byte(`{"steps":[1,"50%"],"canary":{"matchLabels":{"tier":"canary"}}}`)); err != nil {
		panic(err)
	}
	if err := s.Validate(); err != nil {
		panic(err)
	}
	return &s
}

func TestStepCount(t *testing.T) {
	tests := []struct {
		step Step
		n    int
		want int
	}{
		{Step{Count: 3}, 10, 3},
		{Step{Count: 30}, 10, 30}, // cutoff caps it
		{Step{Percent: 10}, 10, 1},
		{Step{Percent: 10}, 11, 2}, // rounded up
		{Step{Percent: 1}, 5, 1},
		{Step{Percent: 50}, 0, 0},
		{Step{Percent: 100}, 7, 7},
	}
	for _, tc := range tests {
		if got := tc.step.count(tc.n); got != tc.want {
			t.Errorf("%s of %d = %d, want %d", tc.step, tc.n, got, tc.want)
		}
	}
}

// TestPosition: stable, canaries first, not by name.
func TestPosition(t *testing.T) {
	if Position("a", "b", false) != Position("a", "b", false) {
		t.Error("Position is not stable")
	}
	if Position("ns", "x", false) == Position("ns", "y", false) {
		t.Error("positions of two names are one")
	}
	if c, n := Position("z", "z", true), Position("a", "a", false); c >= n {
		t.Errorf("canary %s not before %s", c, n)
	}
	if p := Position("a", "b", false); p >= Last || p <= "" {
		t.Errorf("position %s not between \"\" and Last", p)
	}
}

func TestCutoff(t *testing.T) {
	_, pos := ordered(10, nil)
	tests := map[string]struct {
		step      Step
		positions []string
		prev      string
		want      string
		covered   int
	}{
		"first object":         {Step{Count: 1}, pos, "", pos[0], 1},
		"three":                {Step{Count: 3}, pos, pos[0], pos[2], 3},
		"percent":              {Step{Percent: 25}, pos, "", pos[2], 3},
		"all":                  {Step{Percent: 100}, pos, pos[4], Last, 10},
		"count of every one":   {Step{Count: 10}, pos, "", Last, 10},
		"count beyond":         {Step{Count: 50}, pos, "", Last, 10},
		"empty list":           {Step{Count: 1}, nil, "", Last, 0},
		"empty list, percent":  {Step{Percent: 10}, nil, "", Last, 0},
		"unsorted input":       {Step{Count: 2}, []string{pos[5], pos[1], pos[0], pos[9]}, "", pos[1], 2},
		"never backward":       {Step{Count: 2}, pos, pos[6], pos[6], 7},
		"objects went away":    {Step{Percent: 50}, pos[5:], pos[5], pos[7], 3},
		"backward, fewer left": {Step{Count: 1}, pos[:3], pos[8], pos[8], 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := slices.Clone(tc.positions)
			got, covered := cutoff(tc.step, tc.positions, tc.prev)
			if got != tc.want || covered != tc.covered {
				t.Errorf("cutoff = %s covering %d, want %s covering %d", got, covered, tc.want, tc.covered)
			}
			if !slices.Equal(in, tc.positions) {
				t.Error("cutoff reordered its input")
			}
		})
	}
}

// TestCutoffCanariesFirst: the first step takes the canaries, whatever
// their names hash to.
func TestCutoffCanariesFirst(t *testing.T) {
	spec := canarySpec()
	objs, _ := ordered(20, func(i int) bool { return i == 13 || i == 17 })
	c, covered := cutoff(Step{Count: 2}, positions(spec, objs), "")
	if covered != 2 {
		t.Fatalf("covered %d, want 2", covered)
	}
	for _, o := range objs {
		in := o.Position(spec) <= c
		if canary := o.Labels["tier"] == "canary"; in != canary {
			t.Errorf("%s: in the first step %v, canary %v", o.Name, in, canary)
		}
	}
}
