package render

import (
	"fmt"
	"reflect"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/tmplop/operator/engine/render/internal/budget"
)

// fmt builds the whole result of a Sprintf in one buffer before returning
// it, so what it allocates must be known before it runs: a format of 600
// `%1000000d` is 7 KB of text and 600 MB of padding. formatCost bounds it
// from the format and the arguments' shapes.

// printfFunc is text/template's printf held to the budget.
func printfFunc(h *holder) func(string, ...any) (string, error) {
	return func(format string, args ...any) (string, error) {
		m := h.meter()
		if err := m.Check(); err != nil {
			return "", err
		}
		c, err := formatCost(m, format, args)
		if err != nil {
			return "", err
		}
		what := func() string {
			return fmt.Sprintf("printf widths and precisions of %d over %d verbs, up to %d bytes", c.pads, c.verbs, c.bytes)
		}
		return budget.Bounded(m, c.bytes, what, func() (string, error) { return fmt.Sprintf(format, args...), nil }, strCost)
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
func formatCost(m *budget.Meter, format string, args []any) (formatSize, error) {
	f := &formatScan{format: format, args: args, shapes: make([]budget.Shape, len(args))}
	for i, a := range args {
		s, err := m.Measure("printf", a, 0)
		if err != nil {
			return formatSize{}, err
		}
		f.shapes[i] = s
		l := &f.largest
		l.Bytes, l.Leaves, l.Strs = max(l.Bytes, s.Bytes), max(l.Leaves, s.Leaves), max(l.Strs, s.Strs)
		l.Nodes, l.Elems, l.Entries = max(l.Nodes, s.Nodes), max(l.Elems, s.Elems), max(l.Entries, s.Entries)
		f.widest = max(f.widest, starWidth(a))
	}
	for i := 0; i < len(format); {
		lit := strings.IndexByte(format[i:], '%')
		if lit < 0 {
			f.size.bytes += int64(len(format) - i)
			break
		}
		f.size.bytes += int64(lit)
		var done bool
		if i, done = f.directive(i + lit + 1); done {
			break
		}
	}
	if !f.reordered {
		// %!(EXTRA type=value, ...) prints the arguments no verb took.
		for _, s := range f.shapes[min(f.argNum, len(f.shapes)):] {
			f.size.bytes = budget.AddSat(f.size.bytes, verbCost('v', false, 0, s)+64)
		}
	}
	return f.size, nil
}

// formatScan reads a format as fmt does, counting what it prints.
type formatScan struct {
	format  string
	args    []any
	shapes  []budget.Shape // of each argument
	largest budget.Shape   // the largest of every count, for a verb after an index
	widest  int64          // the largest * width, for a * after an index

	argNum    int  // the next argument
	reordered bool // an explicit index was read: any argument may be next
	size      formatSize
}

// directive reads the directive that follows a '%' at i, and counts it.
// done is when fmt stops reading the format there.
func (f *formatScan) directive(i int) (next int, done bool) {
	sharp := false
	for i < len(f.format) && strings.IndexByte("#0+- ", f.format[i]) >= 0 {
		sharp = sharp || f.format[i] == '#'
		i++
	}
	pad, i, over := f.widths(i)
	if i >= len(f.format) || over {
		// fmt gives up on a width past 1e6 and on a format that ends
		// here: %!(NOVERB). The width is charged all the same, on the
		// safe side.
		f.size.bytes = budget.AddSat(f.size.bytes, pad+32)
		f.size.pads = budget.AddSat(f.size.pads, pad)
		return i, true
	}
	verb, size := utf8.DecodeRuneInString(f.format[i:])
	i += size
	if verb == '%' {
		f.size.bytes++
		return i, false
	}
	arg := f.largest
	if !f.reordered && f.argNum < len(f.args) {
		arg = f.shapes[f.argNum]
	}
	f.argNum++
	f.size.verbs++
	f.size.pads = budget.AddSat(f.size.pads, pad)
	f.size.bytes = budget.AddSat(f.size.bytes, verbCost(verb, sharp, pad, arg))
	return i, false
}

// widths reads the width and precision of a directive at i, with the
// explicit indexes around them, and returns their sum: what every leaf
// of the argument may be padded to. over is when fmt gives up on one.
func (f *formatScan) widths(i int) (pad int64, next int, over bool) {
	var n int64
	var after bool
	i, after = f.index(i)
	if i < len(f.format) && f.format[i] == '*' {
		pad, i, after = budget.AddSat(pad, f.star()), i+1, false
	} else {
		n, i, over = digits(f.format, i)
		pad = budget.AddSat(pad, n)
	}
	if !over && i+1 < len(f.format) && f.format[i] == '.' { // as fmt: a final '.' is the verb
		i, after = f.index(i + 1)
		if i < len(f.format) && f.format[i] == '*' {
			pad, i, after = budget.AddSat(pad, f.star()), i+1, false
		} else {
			n, i, over = digits(f.format, i)
			pad = budget.AddSat(pad, n)
		}
	}
	if !after && !over {
		i, _ = f.index(i)
	}
	return pad, i, over
}

// star reads a * width or precision from the next argument.
func (f *formatScan) star() int64 {
	n := f.widest
	if !f.reordered && f.argNum < len(f.args) {
		n = starWidth(f.args[f.argNum])
	}
	f.argNum++
	f.size.bytes += int64(len("%!(BADWIDTH)"))
	return n
}

// index reads an explicit argument index, [n], as fmt does: whether it
// was one decides whether another may follow before the verb.
func (f *formatScan) index(i int) (int, bool) {
	if i >= len(f.format) || f.format[i] != '[' {
		return i, false
	}
	f.reordered = true
	end := strings.IndexByte(f.format[i:], ']')
	if end < 0 {
		return i + 1, false
	}
	n := f.format[i+1 : i+end]
	return i + end + 1, n != "" && strings.Trim(n, "0123456789") == ""
}

type formatSize struct{ bytes, verbs, pads int64 }

// verbCost bounds what one verb prints of an argument of shape s.
func verbCost(verb rune, sharp bool, pad int64, s budget.Shape) int64 {
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
	cost := budget.MulSat(pad, max(s.Leaves, 1)) + 32
	cost = budget.AddSat(cost, budget.MulSat(s.Strs, perStr))
	cost = budget.AddSat(cost, budget.MulSat(s.Leaves, perLeaf))
	cost = budget.AddSat(cost, budget.MulSat(s.Nodes, perNode))
	return budget.AddSat(cost, s.Bytes)
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
		n = budget.AddSat(budget.MulSat(n, 10), int64(s[i]-'0'))
		i++
	}
	return n, i, over
}

// printer is print, println and text/template's escapers, which format
// their arguments with fmt.Sprint and then escape every byte into at most
// grow bytes (html: &#34;, js: \u003C, urlquery: %22).
func printer(h *holder, name string, grow int64, f func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		m := h.meter()
		if err := m.Check(); err != nil {
			return "", err
		}
		var size int64
		for _, a := range args {
			s, err := m.Measure(name, a, 0)
			if err != nil {
				return "", err
			}
			// A number prints in up to 24 bytes, not the 8 it is counted.
			size = budget.AddSat(size, s.Bytes+16*s.Leaves)
		}
		what := func() string { return fmt.Sprintf("%s of %d bytes", name, size) }
		return budget.Bounded(m, budget.MulSat(size, grow), what, func() (string, error) { return f(args...), nil }, strCost)
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
