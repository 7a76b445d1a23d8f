package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
)

// Last is the position after every object's: the cutoff of the last
// step.
const Last = "z"

// Position is an object's place in the order objects move: canaries
// ("0") before the rest ("1"), each by a hash of namespace/name, so that
// the order is the same on every replica and after every restart, and
// does not follow names (a step of 10% is not the namespace that sorts
// first).
func Position(namespace, name string, canary bool) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	p := "1"
	if canary {
		p = "0"
	}
	return p + hex.EncodeToString(sum[:8])
}

// count is how many of n objects step moves.
func (s Step) count(n int) int {
	if s.all() {
		return n
	}
	if s.Percent > 0 {
		return int(math.Ceil(float64(n) * float64(s.Percent) / 100))
	}
	return s.Count
}

// cutoff is the cutoff of step over the objects at positions, never
// before prev (a step never takes an object back), and how many it covers.
func cutoff(step Step, positions []string, prev string) (string, int) {
	n := step.count(len(positions))
	if step.all() || n >= len(positions) {
		return Last, len(positions)
	}
	sorted := slices.Clone(positions)
	slices.Sort(sorted)
	c := sorted[max(n, 1)-1]
	if prev > c {
		c = prev
	}
	covered := 0
	for _, p := range sorted {
		if p <= c {
			covered++
		}
	}
	return c, covered
}

// NextCutoff is where the next step of a kind's rollout puts the cutoff
// over the objects at positions: st's next step, or, when st is nil or
// Complete, the first step of a rollout that would start now. What
// `operator plan` shows: the objects the next step moves.
func NextCutoff(spec *Spec, st *State, positions []string) (next string, step int) {
	if !spec.Staged() {
		return Last, 0
	}
	if st == nil || st.Phase == Complete {
		c, _ := cutoff(spec.Steps[0], positions, "")
		return c, 0
	}
	n := st.Step + 1
	if n >= len(spec.Steps) {
		return Last, len(spec.Steps) - 1
	}
	c, _ := cutoff(spec.Steps[n], positions, st.Cutoff)
	return c, n
}
