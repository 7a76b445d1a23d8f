package main

import (
	"debug/buildinfo"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
)

// span is a range of the binary's virtual addresses owned by one package:
// a symbol, or a piece of the function table that describes one function.
type span struct {
	start, end uint64
	pkg        string
}

// section is an allocated ELF section: where its bytes are in memory, and
// the column of the table they count in.
type section struct {
	name       string
	start, end uint64
	class      string // "text", "rodata", "data"
}

// image is what the table needs of a binary: its sections, the spans of its
// symbols sorted by start, and its modules' paths (for -by module).
type image struct {
	sections []section
	spans    []span
	modules  []string // longest first
	regions  []span   // the parts of the function tables, named in pkg
}

// loadImage reads the symbol table of an unstripped Go binary, and splits
// its pclntab and go:func.* (the function tables, most of read-only data)
// by the function each byte describes: one symbol each in the symbol table,
// they are where the runtime reads as it unwinds stacks, so their resident
// pages follow the functions that ran.
func loadImage(path string) (*image, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("symbols of %s (built with -ldflags=-s? measure an unstripped build of the same source): %w", path, err)
	}
	im := &image{}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 || s.Type == elf.SHT_NOBITS {
			continue
		}
		class := "rodata"
		switch {
		case s.Flags&elf.SHF_EXECINSTR != 0:
			class = "text"
		case s.Flags&elf.SHF_WRITE != 0:
			class = "data"
		}
		im.sections = append(im.sections, section{name: s.Name, start: s.Addr, end: s.Addr + s.Size, class: class})
	}
	sort.Slice(im.sections, func(i, j int) bool { return im.sections[i].start < im.sections[j].start })

	byName := map[string]elf.Symbol{}
	var funcs []span // text symbols, to name the function tables' entries
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF || s.Value == 0 {
			continue
		}
		byName[s.Name] = s
		if s.Size == 0 {
			continue
		}
		sp := span{start: s.Value, end: s.Value + s.Size, pkg: symbolPackage(s.Name)}
		im.spans = append(im.spans, sp)
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && !strings.HasPrefix(s.Name, "go:") { // not go:textfipsstart's markers
			funcs = append(funcs, sp)
		}
	}
	// The function tables are one block each (.gopclntab, and go:func.*
	// inside it); their pieces, smaller, win over the block's own span.
	if sec := f.Section(".gopclntab"); sec != nil {
		data, err := sec.Data()
		if err != nil {
			return nil, fmt.Errorf("pclntab of %s: %w", path, err)
		}
		gofunc := byName["go:func.*"]
		tab, regions, err := splitPclntab(data, sec.Addr, byName["runtime.text"].Value, gofunc.Value, gofunc.Size, funcs)
		if err != nil {
			return nil, fmt.Errorf("function table of %s: %w", path, err)
		}
		im.spans = append(im.spans, tab...)
		im.regions = regions
	}
	im.spans = append(im.spans, typeSpans(f, im.sections, byName["runtime.types"].Value)...)
	sort.Slice(im.spans, func(i, j int) bool { return im.spans[i].start < im.spans[j].start })

	if bi, err := buildinfo.ReadFile(path); err == nil {
		im.modules = append(im.modules, bi.Main.Path)
		for _, d := range bi.Deps {
			im.modules = append(im.modules, d.Path)
		}
		sort.Slice(im.modules, func(i, j int) bool { return len(im.modules[i]) > len(im.modules[j]) })
	}
	return im, nil
}

// typeSpans names the type descriptors of .rodata, which the symbol table
// holds as one unnamed block: DWARF gives each Go type the address of its
// descriptor (DW_AT_go_runtime_type, an offset from runtime.types), and each span runs to the next
// descriptor, so that the names, method tables and strings laid out after a
// type count for it, up to maxTypeSpan (the strings and tables after the
// last type are not its). Without DWARF (-ldflags=-w) .rodata stays one row.
const maxTypeSpan = 8 << 10

func typeSpans(f *elf.File, sections []section, types uint64) []span {
	d, err := f.DWARF()
	if err != nil {
		return nil
	}
	var rodata section
	for _, s := range sections {
		if s.name == ".rodata" {
			rodata = s
		}
	}
	const attrGoRuntimeType = dwarf.Attr(0x2904)
	at := map[uint64]string{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		off, ok := e.Val(attrGoRuntimeType).(uint64)
		addr := types + off
		name, _ := e.Val(dwarf.AttrName).(string)
		if !ok || name == "" || addr < rodata.start || addr >= rodata.end {
			continue
		}
		if _, dup := at[addr]; !dup {
			at[addr] = typePackage(name)
		}
	}
	addrs := make([]uint64, 0, len(at))
	for a := range at {
		addrs = append(addrs, a)
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	out := make([]span, 0, len(addrs))
	for i, a := range addrs {
		end := a + maxTypeSpan
		if i+1 < len(addrs) {
			end = min(end, addrs[i+1])
		}
		out = append(out, span{start: a, end: end, pkg: at[a]})
	}
	return out
}

func sectionBytes(f *elf.File, addr, size uint64) ([]byte, error) {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS && addr >= s.Addr && addr+size <= s.Addr+s.Size {
			b := make([]byte, size)
			_, err := s.ReadAt(b, int64(addr-s.Addr))
			return b, err
		}
	}
	return nil, fmt.Errorf("no section holds %#x+%d", addr, size)
}

// splitPclntab reads the function table (runtime/symtab.go's pcHeader,
// functab and _func, Go 1.20 on) and returns, for each function, the spans
// of its _func record, its name, its pc tables and its funcdata (stack maps,
// inline trees in go:func.*). A table shared by several functions (the
// linker writes identical ones once) goes to the first that names it.
//
// It also returns the tables' regions: function names, compilation units
// and files, pc tables, function records, funcdata.
func splitPclntab(b []byte, base, textStart, gofunc, gofuncSize uint64, funcs []span) ([]span, []span, error) {
	le := binary.LittleEndian
	if len(b) < 72 || b[7] != 8 {
		return nil, nil, fmt.Errorf("not a 64-bit little-endian pclntab")
	}
	if m := le.Uint32(b); m != 0xfffffff1 {
		return nil, nil, fmt.Errorf("pclntab magic %#x: a Go release this tool does not know", m)
	}
	nfunc := int(le.Uint64(b[8:]))
	funcname := le.Uint64(b[32:])
	pctab := le.Uint64(b[56:])
	pcln := le.Uint64(b[64:])
	if pcln+uint64(nfunc+1)*8 > uint64(len(b)) {
		return nil, nil, fmt.Errorf("pclntab of %d functions is cut short", nfunc)
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].start < funcs[j].start })
	pkgAt := func(pc uint64) string {
		i := sort.Search(len(funcs), func(i int) bool { return funcs[i].end > pc })
		if i < len(funcs) && funcs[i].start <= pc {
			return funcs[i].pkg
		}
		return "(unnamed functions)"
	}
	type owner struct {
		off uint64
		pkg string
	}
	var pcOwners, nameOwners, gofuncOwners []owner
	var out []span
	ft := b[pcln:]
	for i := 0; i < nfunc; i++ {
		entry := uint64(le.Uint32(ft[i*8:]))
		funcoff := uint64(le.Uint32(ft[i*8+4:]))
		next := uint64(le.Uint32(ft[(i+1)*8+4:]))
		if i == nfunc-1 || next <= funcoff {
			next = funcoff + 44
		}
		fo := pcln + funcoff
		if fo+44 > uint64(len(b)) {
			return nil, nil, fmt.Errorf("function %d's record at %#x is past the table", i, fo)
		}
		pkg := pkgAt(textStart + entry)
		// The functab entry, then the _func record with its pcdata and
		// funcdata offsets (up to the next function's record).
		out = append(out, span{start: base + pcln + uint64(i)*8, end: base + pcln + uint64(i+1)*8, pkg: pkg})
		out = append(out, span{start: base + fo, end: base + pcln + next, pkg: pkg})
		fn := b[fo:]
		nameOwners = append(nameOwners, owner{uint64(le.Uint32(fn[4:])), pkg})
		for _, o := range []uint32{le.Uint32(fn[16:]), le.Uint32(fn[20:]), le.Uint32(fn[24:])} {
			if o != 0 {
				pcOwners = append(pcOwners, owner{uint64(o), pkg})
			}
		}
		npcdata := int(le.Uint32(fn[28:]))
		nfuncdata := int(fn[43])
		for k := 0; k < npcdata && fo+44+uint64(k+1)*4 <= uint64(len(b)); k++ {
			if o := le.Uint32(fn[44+k*4:]); o != 0 {
				pcOwners = append(pcOwners, owner{uint64(o), pkg})
			}
		}
		for k := 0; k < nfuncdata && fo+44+uint64(npcdata+k+1)*4 <= uint64(len(b)); k++ {
			if o := le.Uint32(fn[44+(npcdata+k)*4:]); o != ^uint32(0) && gofunc != 0 {
				gofuncOwners = append(gofuncOwners, owner{uint64(o), pkg})
			}
		}
	}
	// Each table runs from its offset to the next table's.
	cut := func(owners []owner, at, limit uint64) {
		sort.SliceStable(owners, func(i, j int) bool { return owners[i].off < owners[j].off })
		for i, o := range owners {
			if i > 0 && owners[i-1].off == o.off {
				continue
			}
			end := limit
			for j := i + 1; j < len(owners); j++ {
				if owners[j].off != o.off {
					end = at + owners[j].off
					break
				}
			}
			if at+o.off < end {
				out = append(out, span{start: at + o.off, end: end, pkg: o.pkg})
			}
		}
	}
	cut(nameOwners, base+funcname, base+pctab)
	cut(pcOwners, base+pctab, base+pcln)
	if gofunc != 0 {
		cut(gofuncOwners, gofunc, gofunc+gofuncSize)
	}
	h := func(at int) uint64 { return base + le.Uint64(b[at:]) }
	regions := []span{
		{start: h(32), end: h(40), pkg: "function names"},
		{start: h(40), end: h(56), pkg: "compilation units and files"},
		{start: h(56), end: h(64), pkg: "pc tables (pcsp, pcfile, pcln, pcdata)"},
		{start: h(64), end: base + uint64(len(b)), pkg: "function records (functab, _func)"},
	}
	if gofunc != 0 {
		regions[3].end = gofunc
		regions = append(regions, span{start: gofunc, end: gofunc + gofuncSize, pkg: "funcdata (go:func.*: stack maps, inline trees)"})
		regions = append(regions, span{start: gofunc + gofuncSize, end: base + uint64(len(b)), pkg: "the rest (findfunctab)"})
	}
	return out, regions, nil
}

// symbolPackage is the import path of the package a linker symbol belongs
// to: "k8s.io/api/core/v1.(*Pod).DeepCopy" -> "k8s.io/api/core/v1". Type
// descriptors and itabs count for the package of their (element) type;
// strings and other anonymous data for a name in parentheses.
func symbolPackage(name string) string {
	switch {
	case strings.HasPrefix(name, "go:string."), strings.HasPrefix(name, "go:string*"):
		return "(strings)"
	case strings.HasPrefix(name, "go:itab."):
		name = strings.TrimPrefix(name, "go:itab.")
		if i := indexTop(name, ','); i >= 0 {
			name = name[:i]
		}
		return typePackage(name)
	case strings.HasPrefix(name, "type:"):
		return typePackage(strings.TrimPrefix(name, "type:"))
	case strings.HasPrefix(name, "go:"), strings.HasPrefix(name, "runtime."):
		if strings.HasPrefix(name, "runtime.") {
			return "runtime"
		}
		return "(" + strings.TrimSuffix(name, ".*") + ")"
	}
	return funcPackage(name)
}

// typePackage is the package of the named type a type descriptor's name
// leads to through pointers, slices, arrays, maps' values and channels.
func typePackage(t string) string {
	for _, p := range []string{".eq.", ".hash.", ".namedata.", ".importpath."} {
		t = strings.TrimPrefix(t, p)
	}
	for {
		switch {
		case strings.HasPrefix(t, "*"):
			t = t[1:]
		case strings.HasPrefix(t, "[]"):
			t = t[2:]
		case strings.HasPrefix(t, "chan "):
			t = t[5:]
		case strings.HasPrefix(t, "<-chan "):
			t = t[7:]
		case strings.HasPrefix(t, "map["), strings.HasPrefix(t, "["):
			depth := 0
			end := -1
			for i, c := range t {
				if c == '[' {
					depth++
				} else if c == ']' {
					depth--
					if depth == 0 {
						end = i
						break
					}
				}
			}
			if end < 0 {
				return "(types)"
			}
			t = t[end+1:]
		default:
			if t == "" || strings.HasPrefix(t, "struct") || strings.HasPrefix(t, "func(") || strings.HasPrefix(t, "interface") || strings.HasPrefix(t, "noalg.") || strings.HasPrefix(t, "go.shape.") || strings.HasPrefix(t, "groupReference") {
				return "(types)"
			}
			if indexTop(t, '.') < 0 {
				return "runtime" // a predeclared type: int, string, error
			}
			return funcPackage(t)
		}
	}
}

// funcPackage cuts a qualified name at the first dot after its import
// path's last slash, outside brackets (type arguments hold slashes and
// dots). The linker writes a dot in an import path's last element as %2e.
func funcPackage(name string) string {
	depth, slash := 0, 0
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '/':
			if depth == 0 {
				slash = i
			}
		}
	}
	depth = 0
	for i := slash; i < len(name); i++ {
		switch name[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '.':
			if depth == 0 {
				return strings.ReplaceAll(name[:i], "%2e", ".")
			}
		}
	}
	return "(" + name + ")"
}

// indexTop is the index of the first c outside brackets, or -1.
func indexTop(s string, c byte) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '(', '{':
			depth++
		case ']', ')', '}':
			depth--
		case c:
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// group is the row a package counts in: the package itself, or with -by
// module the module that provides it ("std" for the standard library).
func (im *image) group(pkg, by string) string {
	if by != "module" || strings.HasPrefix(pkg, "(") {
		return pkg
	}
	for _, m := range im.modules {
		if pkg == m || strings.HasPrefix(pkg, m+"/") {
			return m
		}
	}
	if strings.HasPrefix(pkg, "vendor/") || !strings.Contains(strings.SplitN(pkg, "/", 2)[0], ".") {
		return "std"
	}
	return pkg
}
