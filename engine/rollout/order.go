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
