//go:build race

package render

// raceDetector: the race detector empties sync.Pools at random, so that
// what regexp and fmt keep in pools is allocated again.
const raceDetector = true
