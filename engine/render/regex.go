package render

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"text/template"

	"github.com/tmplop/operator/engine/render/internal/budget"
)

// Go's regular expressions run in time linear in the input, but the factor
// is the size of the compiled program, and no deadline check can interrupt
// a match: a 5 KB expression of `(a|b)` over a 1 MB string runs for
// minutes. The program can also be a thousand times larger than the
// expression that compiles to it (x{1000}), and compiling allocates about
// 250 bytes an instruction. So every regex function is charged its program
// before compiling, refused past maxRegexWork steps, and charged what it
// returns; sprig compiles on every call, and so does each call here.
// Parsing comes first and allocates too: an expression too large for the
// budget left is refused before it is parsed (parseCost).

// maxRegexWork bounds instructions times input bytes of one call, each
// match costing as much as matchSteps instructions: about a quarter of a
// second for the worst programs measured on a loaded machine.
const (
	maxRegexWork = 1 << 24
	matchSteps   = 48
	instCost     = 256     // bytes a compiled instruction allocates
	compileCost  = 4 << 10 // and a compiled expression in any case

	parseByteCost    = 256 // bytes parsing allocates at most per byte of expression
	unicodeClassCost = 16 << 10
	parseFixedCost   = 2 << 10
)

// What the lists a regex function returns take: FindAllStringIndex
// allocates a pair of ints and a slot per match, and the strings another.
const (
	findAllCost  = 112
	splitAllCost = 168
)

func regexFuncs(h *holder) template.FuncMap {
	return template.FuncMap{
		"regexMatch":                 regexMatch(h, false),
		"mustRegexMatch":             regexMatch(h, true),
		"regexFind":                  regexFind(h, false),
		"mustRegexFind":              regexFind(h, true),
		"regexFindAll":               regexFindAll(h, false),
		"mustRegexFindAll":           regexFindAll(h, true),
		"regexSplit":                 regexSplit(h, false),
		"mustRegexSplit":             regexSplit(h, true),
		"regexReplaceAll":            regexReplace(h, "regexReplaceAll", false, false),
		"regexReplaceAllLiteral":     regexReplace(h, "regexReplaceAllLiteral", true, false),
		"mustRegexReplaceAll":        regexReplace(h, "mustRegexReplaceAll", false, true),
		"mustRegexReplaceAllLiteral": regexReplace(h, "mustRegexReplaceAllLiteral", true, true),
	}
}

// isBudget reports whether err is a budget's, which every regex function
// returns as it is, must* or not.
func isBudget(err error) bool {
	_, ok := err.(*BudgetError)
	return ok
}

// compileFor returns expr compiled for a call over s, or for sprig's
// functions that are not must*, the panic of regexp.MustCompile as an
// error.
func compileFor(m *budget.Meter, name, expr, s string, must bool) (*regexp.Regexp, error) {
	re, err := regex(m, name, expr, s)
	if err != nil && !must && !isBudget(err) {
		return nil, fmt.Errorf("regexp: Compile(%s): %v", quoteExpr(expr), err)
	}
	return re, err
}

func regexMatch(h *holder, must bool) func(string, string) (bool, error) {
	return func(expr, s string) (bool, error) {
		re, err := regex(h.meter(), "regexMatch", expr, s)
		if err != nil {
			if isBudget(err) || must {
				return false, err
			}
			return false, nil // sprig's regexMatch ignores a bad expression
		}
		return re.MatchString(s), nil
	}
}

func regexFind(h *holder, must bool) func(string, string) (string, error) {
	return func(expr, s string) (string, error) {
		re, err := compileFor(h.meter(), "regexFind", expr, s, must)
		if err != nil {
			return "", err
		}
		return budget.Bounded(h.meter(), int64(len(s)), func() string { return "regexFind" }, func() (string, error) { return re.FindString(s), nil }, strCost)
	}
}

func regexFindAll(h *holder, must bool) func(string, string, int) ([]string, error) {
	return func(expr, s string, n int) ([]string, error) {
		re, err := compileFor(h.meter(), "regexFindAll", expr, s, must)
		if err != nil {
			return nil, err
		}
		idx, err := matches(h.meter(), "regexFindAll", re, s, n, findAllCost)
		if err != nil || idx == nil {
			return nil, err
		}
		out := make([]string, len(idx))
		for i, m := range idx {
			out[i] = s[m[0]:m[1]]
		}
		return out, nil
	}
}

func regexSplit(h *holder, must bool) func(string, string, int) ([]string, error) {
	return func(expr, s string, n int) ([]string, error) {
		re, err := compileFor(h.meter(), "regexSplit", expr, s, must)
		if err != nil {
			return nil, err
		}
		// regexp.Split, from matches counted and charged first.
		if n == 0 {
			return nil, nil
		}
		if len(expr) > 0 && len(s) == 0 {
			return []string{""}, nil
		}
		idx, err := matches(h.meter(), "regexSplit", re, s, n, splitAllCost)
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, len(idx))
		beg, end := 0, 0
		for _, m := range idx {
			if n > 0 && len(out) == n-1 {
				break
			}
			end = m[0]
			if m[1] != 0 {
				out = append(out, s[beg:end])
			}
			beg = m[1]
		}
		if end != len(s) {
			out = append(out, s[beg:])
		}
		return out, nil
	}
}

func regexReplace(h *holder, name string, literal, must bool) func(string, string, string) (string, error) {
	return func(expr, s, repl string) (string, error) {
		re, err := compileFor(h.meter(), name, expr, s, must)
		if err != nil {
			return "", err
		}
		return budget.Bounded(h.meter(), regexBound(s, repl), func() string { return fmt.Sprintf("%s in %d bytes", name, len(s)) }, func() (string, error) {
			if literal {
				return re.ReplaceAllLiteralString(s, repl), nil
			}
			return re.ReplaceAllString(s, repl), nil
		}, strCost)
	}
}

// regex compiles expr for a call over s, refused past maxRegexWork and
// bounded by what compiling allocates.
func regex(m *budget.Meter, name, expr, s string) (*regexp.Regexp, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	if err := m.Fits(parseCost(expr), func() string {
		return fmt.Sprintf("%s: parsing an expression of %d bytes", name, len(expr))
	}); err != nil {
		return nil, err
	}
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err // what regexp.Compile says
	}
	insts := progSize(parsed)
	steps := budget.MulSat(insts+matchSteps, int64(len(s))+1)
	if err := budget.TooMuchWork(steps, maxRegexWork, func() string {
		return fmt.Sprintf("%s: a program of about %d instructions over %d bytes", name, insts, len(s))
	}); err != nil {
		return nil, err
	}
	return budget.Bounded(m, budget.AddSat(budget.MulSat(insts, instCost), compileCost), func() string {
		return fmt.Sprintf("%s: compiling a program of about %d instructions", name, insts)
	}, func() (*regexp.Regexp, error) { return regexp.Compile(expr) }, nil)
}

// parseCost bounds what parsing expr allocates, refused before it is
// parsed: up to 250 bytes a byte of most expressions (`.`, `^`, `(|)`),
// and 13 KiB for each Unicode class (\pL expands to hundreds of ranges).
// Compiling is charged more than parsing allocated, so only a refusal
// needs the bound: FuzzFuncAlloc found a 35 KB expression refused after
// its parse had allocated 3.6 MB.
func parseCost(expr string) int64 {
	classes := int64(strings.Count(expr, `\p`) + strings.Count(expr, `\P`))
	return budget.AddSat(budget.AddSat(budget.MulSat(int64(len(expr)), parseByteCost), budget.MulSat(classes, unicodeClassCost)), parseFixedCost)
}

// progSize estimates the instructions expr compiles to: repetitions are
// expanded (x{3} is xxx), as regexp's simplification does.
func progSize(re *syntax.Regexp) int64 {
	n := int64(1)
	for _, sub := range re.Sub {
		n = budget.AddSat(n, progSize(sub))
	}
	switch re.Op {
	case syntax.OpLiteral:
		n += int64(len(re.Rune))
	case syntax.OpCharClass:
		n += int64(len(re.Rune)) / 8
	case syntax.OpRepeat:
		reps := int64(max(re.Min, re.Max, 1))
		n = budget.AddSat(budget.MulSat(n, reps), reps)
	case syntax.OpCapture, syntax.OpAlternate, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		n = budget.AddSat(n, int64(len(re.Sub))+1)
	}
	return n
}

// matches is FindAllStringIndex(s, n), refused before it allocates more
// matches than the budget left can hold at per bytes each, and charged.
// What it allocates is not known before the search: the search itself is
// bounded, asked for at most one match more than fits.
func matches(m *budget.Meter, name string, re *regexp.Regexp, s string, n int, per int64) ([][]int, error) {
	fit := m.Remaining() / per
	want := n
	if fit < int64(len(s))+1 && (n < 0 || int64(n) > fit) {
		// Ask for one more than fits: if it comes back, the rest would not.
		want = int(fit) + 1
	}
	var found int
	return budget.Bounded(m, 0, func() string { return fmt.Sprintf("%s of %d matches", name, found) },
		func() ([][]int, error) {
			idx := re.FindAllStringIndex(s, want)
			if want != n && len(idx) == want {
				return nil, m.Exceeded(fmt.Sprintf("%s of %d bytes: more than %d matches", name, len(s), fit))
			}
			found = len(idx)
			return idx, nil
		}, func(idx [][]int) int64 { return per * int64(len(idx)) })
}

// quoteExpr quotes an expression as regexp.MustCompile's panic does.
func quoteExpr(s string) string {
	if strconv.CanBackquote(s) {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}

// regexBound is an upper bound of a regex replacement's output: matches
// do not overlap, so each $ reference expands to at most the whole input
// once over all matches, and there are at most len(s)+1 matches.
func regexBound(s, repl string) int64 {
	refs := int64(strings.Count(repl, "$"))
	return budget.MulSat(int64(len(s)), 1+refs) + budget.MulSat(int64(len(s))+1, int64(len(repl)))
}
