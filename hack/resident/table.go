package main

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
)

// classes are the table's columns: where in the binary a resident byte is.
var classes = []string{"text", "rodata", "pclntab", "data"}

// row is a package's (or module's) resident bytes by class.
type row struct {
	name  string
	bytes map[string]uint64
}

func (r row) total() uint64 {
	var t uint64
	for _, b := range r.bytes {
		t += b
	}
	return t
}

type table struct {
	rows     []row // largest first
	total    map[string]uint64
	pages    uint64 // resident file pages of every file the process maps
	exePages uint64 // ... of its binary
	status   map[string]uint64
	other    map[string]uint64 // resident pages of files other than the binary
	regions  []span            // the function tables' parts ...
	inRegion []uint64          // ... and their resident bytes
}

// tabulate splits each resident page of the binary among the spans that lie
// in it, byte by byte (a byte in two spans counts for the smaller), and adds
// the bytes to the span's package in the column of the byte's section.
// Bytes no span covers count for a row named after their section.
func tabulate(im *image, snap *snapshot, by string) *table {
	t := &table{total: map[string]uint64{}, status: snap.status, other: map[string]uint64{},
		regions: im.regions, inRegion: make([]uint64, len(im.regions))}
	rows := map[string]map[string]uint64{}
	add := func(name, class string, n uint64) {
		if rows[name] == nil {
			rows[name] = map[string]uint64{}
		}
		rows[name][class] += n
		t.total[class] += n
	}
	ov := newOverlaps(im.spans)
	var owner [pageSize]int32
	for _, m := range snap.mappings {
		t.pages += uint64(len(m.resident))
		if !m.exe {
			t.other[filepath.Base(m.path)] += uint64(len(m.resident))
			continue
		}
		t.exePages += uint64(len(m.resident))
		for _, p := range m.resident {
			for k, r := range im.regions {
				t.inRegion[k] += min(r.end, p+pageSize) - min(max(r.start, p), min(r.end, p+pageSize))
			}
			for i := range owner {
				owner[i] = -1
			}
			for _, k := range ov.bySize(p, p+pageSize) {
				s := im.spans[k]
				lo, hi := max(s.start, p), min(s.end, p+pageSize)
				for a := lo; a < hi; a++ {
					if owner[a-p] < 0 {
						owner[a-p] = int32(k)
					}
				}
			}
			// Count runs of one owner within one section.
			for i := uint64(0); i < pageSize; {
				sec := im.sectionAt(p + i)
				j := i + 1
				for j < pageSize && owner[j] == owner[i] && (sec == nil || p+j < sec.end) {
					j++
				}
				class, name := "data", "(outside sections)"
				if sec != nil {
					class, name = sec.class, "("+sec.name+")"
					if sec.name == ".gopclntab" {
						class = "pclntab"
					}
				}
				if owner[i] >= 0 {
					name = im.group(im.spans[owner[i]].pkg, by)
				}
				add(name, class, j-i)
				i = j
			}
		}
	}
	for name, b := range rows {
		t.rows = append(t.rows, row{name: name, bytes: b})
	}
	sort.Slice(t.rows, func(i, j int) bool {
		if a, b := t.rows[i].total(), t.rows[j].total(); a != b {
			return a > b
		}
		return t.rows[i].name < t.rows[j].name
	})
	return t
}

// overlaps finds the spans that overlap a range: spans sorted by start, and
// the largest end of any span up to each index.
type overlaps struct {
	spans  []span
	maxEnd []uint64
}

func newOverlaps(spans []span) *overlaps {
	o := &overlaps{spans: spans, maxEnd: make([]uint64, len(spans))}
	var m uint64
	for i, s := range spans {
		m = max(m, s.end)
		o.maxEnd[i] = m
	}
	return o
}

// bySize is the indexes of the spans that overlap [lo, hi), smallest first.
func (o *overlaps) bySize(lo, hi uint64) []int {
	i := sort.Search(len(o.spans), func(i int) bool { return o.spans[i].start >= hi })
	var out []int
	for j := i - 1; j >= 0 && o.maxEnd[j] > lo; j-- {
		if o.spans[j].end > lo {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		sa, sb := o.spans[out[a]], o.spans[out[b]]
		return sa.end-sa.start < sb.end-sb.start
	})
	return out
}

func (im *image) sectionAt(a uint64) *section {
	i := sort.Search(len(im.sections), func(i int) bool { return im.sections[i].end > a })
	if i < len(im.sections) && im.sections[i].start <= a {
		return &im.sections[i]
	}
	return nil
}

// shorten cuts a row's name (a generic instantiation's can be pages long)
// to keep the table readable.
func shorten(name string) string {
	const width = 72
	if len(name) <= width {
		return name
	}
	return name[:width-3] + "..."
}

func mib(b uint64) string { return fmt.Sprintf("%.2f", float64(b)/(1<<20)) }

func (t *table) write(w io.Writer, top int, argv []string) {
	fmt.Fprintf(w, "%s\n", strings.Join(argv, " "))
	fmt.Fprintf(w, "VmRSS %.1f MiB, VmHWM %.1f MiB, RssAnon %.1f MiB, RssFile %.1f MiB (/proc/PID/status)\n",
		float64(t.status["VmRSS"])/1024, float64(t.status["VmHWM"])/1024, float64(t.status["RssAnon"])/1024, float64(t.status["RssFile"])/1024)
	fmt.Fprintf(w, "resident file pages (pagemap): %s MiB, of which the binary %s MiB", mib(t.pages*pageSize), mib(t.exePages*pageSize))
	var others []string
	for f, n := range t.other {
		if n > 0 {
			others = append(others, fmt.Sprintf("%s %s", f, mib(n*pageSize)))
		}
	}
	sort.Strings(others)
	if len(others) > 0 {
		fmt.Fprintf(w, ", other files: %s", strings.Join(others, ", "))
	}
	fmt.Fprintf(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "MiB\t%s\ttotal\t \n", strings.Join(classes, "\t"))
	n := len(t.rows)
	if top > 0 && top < n {
		n = top
	}
	var shown map[string]uint64 = map[string]uint64{}
	for _, r := range t.rows[:n] {
		fmt.Fprintf(tw, "%s\t", shorten(r.name))
		for _, c := range classes {
			fmt.Fprintf(tw, "%s\t", mib(r.bytes[c]))
			shown[c] += r.bytes[c]
		}
		fmt.Fprintf(tw, "%s\t \n", mib(r.total()))
	}
	if n < len(t.rows) {
		fmt.Fprintf(tw, "(%d others)\t", len(t.rows)-n)
		var sum uint64
		for _, c := range classes {
			fmt.Fprintf(tw, "%s\t", mib(t.total[c]-shown[c]))
			sum += t.total[c] - shown[c]
		}
		fmt.Fprintf(tw, "%s\t \n", mib(sum))
	}
	fmt.Fprintf(tw, "the binary\t")
	var sum uint64
	for _, c := range classes {
		fmt.Fprintf(tw, "%s\t", mib(t.total[c]))
		sum += t.total[c]
	}
	fmt.Fprintf(tw, "%s\t \n", mib(sum))
	tw.Flush()
	if len(t.regions) > 0 {
		fmt.Fprintf(w, "\npclntab by table (resident of size, MiB):")
		for k, r := range t.regions {
			fmt.Fprintf(w, " %s %s of %s;", r.pkg, mib(t.inRegion[k]), mib(r.end-r.start))
		}
		fmt.Fprintln(w)
	}
}
