package render

import (
	"fmt"
	"reflect"
	"strings"
	"text/template"
	"unicode/utf8"
)

// fmt builds the whole result of a Sprintf in one buffer before returning
// it, so what it allocates must be known before it runs: a format of 600
// `%1000000d` is 7 KB of text and 600 MB of padding. formatCost bounds it
// from the format and the arguments' shapes.

// printfFunc is text/template's printf held to the budget.
func printfFunc(h *holder) func(string, ...any) (string, error) {
	return func(format string, args ...any) (string, error) {
		st := h.st
		if err := st.meter.check(); err != nil {
			return "", err
		}
		c, err := st.formatCost(format, args)
		if err != nil {
			return "", err
		}
		what := func() string {
			return fmt.Sprintf("printf widths and precisions of %d over %d verbs, up to %d bytes", c.pads, c.verbs, c.bytes)
		}
		return bounded(&st.meter, c.bytes, what, func() (string, error) { return fmt.Sprintf(format, args...), nil }, strCost)
	}
}

// formatCost is an upper bound of the bytes fmt.Sprintf(format, args...)
// allocates. Every verb may print: its width and precision once per leaf
// of its argument (fmt pads each element of a list), the argument itself
// grown by what the verb does to it (%x doubles a string and more, %q
// escapes, %f of 1e308 is 300 digits, %#v adds type names), and a few
// bytes of %!verb(...) when it goes wrong. A verb after an explicit index
// ([n]) may print any argument, so it is charged for the largest, and a *
// width read after one for the largest number.
func (st *renderState) formatCost(format string, args []any) (formatSize, error) {
	shapes := make([]shape, len(args))
	var largest shape
	var widest, cost, pads, verbs int64
	for i, a := range args {
		s, err := st.measure("printf", a, 0)
		if err != nil {
			return formatSize{}, err
		}
		shapes[i] = s
		largest.bytes, largest.leaves, largest.strs = max(largest.bytes, s.bytes), max(largest.leaves, s.leaves), max(largest.strs, s.strs)
		largest.nodes, largest.elems, largest.entries = max(largest.nodes, s.nodes), max(largest.elems, s.elems), max(largest.entries, s.entries)
		widest = max(widest, starWidth(a))
	}
	argNum, reordered := 0, false
	// star reads a * width or precision from the next argument.
	star := func() int64 {
		n := widest
		if !reordered && argNum < len(args) {
			n = starWidth(args[argNum])
		}
		argNum++
		cost += int64(len("%!(BADWIDTH)"))
		return n
	}
	// index reads an explicit argument index, [n], as fmt does: whether it
	// was one decides whether another may follow before the verb.
	index := func(i int) (int, bool) {
		if i >= len(format) || format[i] != '[' {
			return i, false
		}
		reordered = true
		end := strings.IndexByte(format[i:], ']')
		if end < 0 {
			return i + 1, false
		}
		n := format[i+1 : i+end]
		return i + end + 1, n != "" && strings.Trim(n, "0123456789") == ""
	}
	for i := 0; i < len(format); {
		lit := strings.IndexByte(format[i:], '%')
		if lit < 0 {
			cost += int64(len(format) - i)
			break
		}
		cost += int64(lit)
		i += lit + 1
		sharp := false
		for i < len(format) && strings.IndexByte("#0+- ", format[i]) >= 0 {
			sharp = sharp || format[i] == '#'
			i++
		}
		var pad, n int64
		var after, over bool
		i, after = index(i)
		if i < len(format) && format[i] == '*' {
			pad, i, after = addSat(pad, star()), i+1, false
		} else {
			n, i, over = digits(format, i)
			pad = addSat(pad, n)
		}
		if !over && i+1 < len(format) && format[i] == '.' { // as fmt: a final '.' is the verb
			i, after = index(i + 1)
			if i < len(format) && format[i] == '*' {
				pad, i, after = addSat(pad, star()), i+1, false
			} else {
				n, i, over = digits(format, i)
				pad = addSat(pad, n)
			}
		}
		if !after && !over {
			i, _ = index(i)
		}
		if i >= len(format) || over {
			// fmt gives up on a width past 1e6 and on a format that ends
			// here: %!(NOVERB). The width is charged all the same, on the
			// safe side.
			cost = addSat(cost, pad+32)
			pads = addSat(pads, pad)
			break
		}
		verb, size := utf8.DecodeRuneInString(format[i:])
		i += size
		if verb == '%' {
			cost++
			continue
		}
		arg := largest
		if !reordered && argNum < len(args) {
			arg = shapes[argNum]
		}
		argNum++
		verbs++
		pads = addSat(pads, pad)
		cost = addSat(cost, verbCost(verb, sharp, pad, arg))
	}
	if !reordered {
		// %!(EXTRA type=value, ...) prints the arguments no verb took.
		for _, s := range shapes[min(argNum, len(shapes)):] {
			cost = addSat(cost, verbCost('v', false, 0, s)+64)
		}
	}
	return formatSize{bytes: cost, verbs: verbs, pads: pads}, nil
}

type formatSize struct{ bytes, verbs, pads int64 }

// verbCost bounds what one verb prints of an argument of shape s.
func verbCost(verb rune, sharp bool, pad int64, s shape) int64 {
	perStr, perLeaf, perNode := int64(1), int64(24), int64(8)
	switch verb {
	case 'x', 'X':
		perStr = 5 // "% #x": "0x61 0x62"
	case 'q':
		perStr = 4 // "\x00"
	case 'v':
		if sharp {
			perStr, perNode = 4, 32 // quoted strings, type names: map[string]interface {}{...}
		}
	case 'f', 'F':
		perLeaf = 330 // %f of 1e308
	case 'b':
		perLeaf = 70 // 64 binary digits of an int, sign and prefix
	}
	cost := mulSat(pad, max(s.leaves, 1)) + 32
	cost = addSat(cost, mulSat(s.strs, perStr))
	cost = addSat(cost, mulSat(s.leaves, perLeaf))
	cost = addSat(cost, mulSat(s.nodes, perNode))
	return addSat(cost, s.bytes)
}

// starWidth is the width fmt reads from a * argument: its magnitude when it
// is an integer, else none (fmt prints %!(BADWIDTH)). Counted even past
// the 1e6 that fmt itself refuses: a refusal here is the safe side.
func starWidth(a any) int64 {
	switch v := reflect.ValueOf(a); v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return min(absInt64(v.Int()), 1<<62)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int64(min(v.Uint(), 1<<62))
	}
	return 0
}

// digits reads a decimal number at i, saturating, and whether fmt gives up
// on it: past 1e6, fmt stops reading the format there.
func digits(s string, i int) (n int64, next int, over bool) {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		over = over || n > 1e6
		n = addSat(mulSat(n, 10), int64(s[i]-'0'))
		i++
	}
	return n, i, over
}

// printer is print, println and text/template's escapers, which format
// their arguments with fmt.Sprint and then escape every byte into at most
// grow bytes (html: &#34;, js: \u003C, urlquery: %22).
func printer(h *holder, name string, grow int64, f func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		st := h.st
		if err := st.meter.check(); err != nil {
			return "", err
		}
		var size int64
		for _, a := range args {
			s, err := st.measure(name, a, 0)
			if err != nil {
				return "", err
			}
			// A number prints in up to 24 bytes, not the 8 it is counted.
			size = addSat(size, s.bytes+16*s.leaves)
		}
		what := func() string { return fmt.Sprintf("%s of %d bytes", name, size) }
		return bounded(&st.meter, mulSat(size, grow), what, func() (string, error) { return f(args...), nil }, strCost)
	}
}

// printFuncs are text/template's printing builtins, which format whole
// values with fmt; overriding a builtin by name is allowed.
func printFuncs(h *holder) template.FuncMap {
	return template.FuncMap{
		"printf":   printfFunc(h),
		"print":    printer(h, "print", 1, fmt.Sprint),
		"println":  printer(h, "println", 1, fmt.Sprintln),
		"html":     printer(h, "html", 5, template.HTMLEscaper),
		"js":       printer(h, "js", 6, template.JSEscaper),
		"urlquery": printer(h, "urlquery", 3, template.URLQueryEscaper),
	}
}

func strCost(s string) int64 { return int64(len(s)) }
