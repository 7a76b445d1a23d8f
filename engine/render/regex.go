package render

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"text/template"
)

// Go's regular expressions run in time linear in the input, but the factor
// is the size of the compiled program, and no deadline check can interrupt
// a match: a 5 KB expression of `(a|b)` over a 1 MB string runs for
// minutes. The program can also be a thousand times larger than the
// expression that compiles to it (x{1000}), and compiling allocates about
// 250 bytes an instruction. So every regex function is charged its program
// before compiling, refused past maxRegexWork steps, and charged what it
// returns; sprig compiles on every call, and so does each call here.

// maxRegexWork bounds instructions times input bytes of one call, each
// match costing as much as matchSteps instructions: about a quarter of a
// second for the worst programs measured on a loaded machine.
const (
	maxRegexWork = 1 << 24
	matchSteps   = 48
	instCost     = 256     // bytes a compiled instruction allocates
	compileCost  = 4 << 10 // and a compiled expression in any case
)

// What the lists a regex function returns take: FindAllStringIndex
// allocates a pair of ints and a slot per match, and the strings another.
const (
	findAllCost  = 112
	splitAllCost = 168
)

func regexFuncs(h *holder) template.FuncMap {
	m := func() *meter { return &h.st.meter }
	// compile returns the expression compiled, or for sprig's functions
	// that are not must*, the panic of regexp.MustCompile as an error.
	compile := func(name, expr, s string, must bool) (*regexp.Regexp, error) {
		re, err := h.st.regex(name, expr, s)
		if err != nil && !must {
			if _, budget := err.(*BudgetError); !budget {
				return nil, fmt.Errorf("regexp: Compile(%s): %v", quoteExpr(expr), err)
			}
		}
		return re, err
	}
	match := func(must bool) func(string, string) (bool, error) {
		return func(expr, s string) (bool, error) {
			re, err := h.st.regex("regexMatch", expr, s)
			if err != nil {
				if _, budget := err.(*BudgetError); budget || must {
					return false, err
				}
				return false, nil // sprig's regexMatch ignores a bad expression
			}
			return re.MatchString(s), nil
		}
	}
	find := func(must bool) func(string, string) (string, error) {
		return func(expr, s string) (string, error) {
			re, err := compile("regexFind", expr, s, must)
			if err != nil {
				return "", err
			}
			return bounded(m(), int64(len(s)), func() string { return "regexFind" }, func() (string, error) { return re.FindString(s), nil }, strCost)
		}
	}
	findAll := func(must bool) func(string, string, int) ([]string, error) {
		return func(expr, s string, n int) ([]string, error) {
			re, err := compile("regexFindAll", expr, s, must)
			if err != nil {
				return nil, err
			}
			idx, err := h.st.matches("regexFindAll", re, s, n, findAllCost)
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
	split := func(must bool) func(string, string, int) ([]string, error) {
		return func(expr, s string, n int) ([]string, error) {
			re, err := compile("regexSplit", expr, s, must)
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
			idx, err := h.st.matches("regexSplit", re, s, n, splitAllCost)
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
	replace := func(name string, literal, must bool) func(string, string, string) (string, error) {
		return func(expr, s, repl string) (string, error) {
			re, err := compile(name, expr, s, must)
			if err != nil {
				return "", err
			}
			return bounded(m(), regexBound(s, repl), func() string { return fmt.Sprintf("%s in %d bytes", name, len(s)) }, func() (string, error) {
				if literal {
					return re.ReplaceAllLiteralString(s, repl), nil
				}
				return re.ReplaceAllString(s, repl), nil
			}, strCost)
		}
	}
	return template.FuncMap{
		"regexMatch":                 match(false),
		"mustRegexMatch":             match(true),
		"regexFind":                  find(false),
		"mustRegexFind":              find(true),
		"regexFindAll":               findAll(false),
		"mustRegexFindAll":           findAll(true),
		"regexSplit":                 split(false),
		"mustRegexSplit":             split(true),
		"regexReplaceAll":            replace("regexReplaceAll", false, false),
		"regexReplaceAllLiteral":     replace("regexReplaceAllLiteral", true, false),
		"mustRegexReplaceAll":        replace("mustRegexReplaceAll", false, true),
		"mustRegexReplaceAllLiteral": replace("mustRegexReplaceAllLiteral", true, true),
	}
}

// regex compiles expr for a call over s, charged and bounded first.
func (st *renderState) regex(name, expr, s string) (*regexp.Regexp, error) {
	if err := st.meter.check(); err != nil {
		return nil, err
	}
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err // what regexp.Compile says
	}
	insts := progSize(parsed)
	steps := mulSat(insts+matchSteps, int64(len(s))+1)
	if err := tooMuchWork(steps, maxRegexWork, func() string {
		return fmt.Sprintf("%s: a program of about %d instructions over %d bytes", name, insts, len(s))
	}); err != nil {
		return nil, err
	}
	if err := st.meter.charge(addSat(mulSat(insts, instCost), compileCost), func() string {
		return fmt.Sprintf("%s: compiling a program of about %d instructions", name, insts)
	}); err != nil {
		return nil, err
	}
	return regexp.Compile(expr)
}

// progSize estimates the instructions expr compiles to: repetitions are
// expanded (x{3} is xxx), as regexp's simplification does.
func progSize(re *syntax.Regexp) int64 {
	n := int64(1)
	for _, sub := range re.Sub {
		n = addSat(n, progSize(sub))
	}
	switch re.Op {
	case syntax.OpLiteral:
		n += int64(len(re.Rune))
	case syntax.OpCharClass:
		n += int64(len(re.Rune)) / 8
	case syntax.OpRepeat:
		reps := int64(max(re.Min, re.Max, 1))
		n = addSat(mulSat(n, reps), reps)
	case syntax.OpCapture, syntax.OpAlternate, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		n = addSat(n, int64(len(re.Sub))+1)
	}
	return n
}

// matches is FindAllStringIndex(s, n), refused before it allocates more
// matches than the budget left can hold at per bytes each, and charged.
func (st *renderState) matches(name string, re *regexp.Regexp, s string, n int, per int64) ([][]int, error) {
	fit := st.meter.remaining() / per
	want := n
	if fit < int64(len(s))+1 && (n < 0 || int64(n) > fit) {
		// Ask for one more than fits: if it comes back, the rest would not.
		want = int(fit) + 1
	}
	idx := re.FindAllStringIndex(s, want)
	if want != n && len(idx) == want {
		return nil, &BudgetError{Budget: BudgetOutput, Limit: st.meter.budget.MaxOutputBytes,
			Detail: fmt.Sprintf("%s of %d bytes: more than %d matches", name, len(s), fit)}
	}
	return idx, st.meter.charge(per*int64(len(idx)), func() string { return fmt.Sprintf("%s of %d matches", name, len(idx)) })
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
	return mulSat(int64(len(s)), 1+refs) + mulSat(int64(len(s))+1, int64(len(repl)))
}
