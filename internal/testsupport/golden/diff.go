package golden

import (
	"fmt"
	"strings"
)

// Diff is a line diff of want and got ("-" want, "+" got) with a line of
// context around each change: what a failed comparison shows.
func Diff(want, got string) string {
	x, y := strings.Split(want, "\n"), strings.Split(got, "\n")
	// lcs[i][j]: the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			lines = append(lines, line{' ', x[i]})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			lines = append(lines, line{'+', y[j]})
			j++
		default:
			lines = append(lines, line{'-', x[i]})
			i++
		}
	}
	var out strings.Builder
	for n, l := range lines {
		near := l.op != ' ' || n > 0 && lines[n-1].op != ' ' || n+1 < len(lines) && lines[n+1].op != ' '
		if near {
			fmt.Fprintf(&out, "%c %s\n", l.op, l.text)
		}
	}
	return out.String()
}
