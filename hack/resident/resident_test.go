package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSymbolPackage(t *testing.T) {
	for name, want := range map[string]string{
		"k8s.io/api/core/v1.(*Pod).DeepCopy": "k8s.io/api/core/v1",
		"main.main":                          "main",
		"sync.(*Mutex).Lock":                 "sync",
		"gopkg.in/inf%2ev0.(*Dec).Add":       "gopkg.in/inf.v0",
		"slices.SortFunc[go.shape.[]k8s.io/api/core/v1.Pod,go.shape.struct {}]": "slices",
		"k8s.io/apimachinery/pkg/util/sets.Set[go.shape.string].Has":            "k8s.io/apimachinery/pkg/util/sets",
		"github.com/x/y.(*T[go.shape.interface { a/b.C() }]).M.func1":           "github.com/x/y",
		"runtime.mallocgc": "runtime",
		"go:itab.*k8s.io/api/core/v1.Pod,k8s.io/apimachinery/pkg/runtime.Object": "k8s.io/api/core/v1",
		"go:string.\"hello\"": "(strings)",
		"go:func.*":           "(go:func)",
		"type:*map[string]*k8s.io/api/apps/v1.Deployment":                           "k8s.io/api/apps/v1",
		"type:[]github.com/spf13/cobra.Command":                                     "github.com/spf13/cobra",
		"type:[4]net/netip.Addr":                                                    "net/netip",
		"type:struct { a int }":                                                     "(types)",
		"type:go.shape.struct { a/b.C }":                                            "(types)",
		"type:int":                                                                  "runtime",
		"type:.eq.k8s.io/api/core/v1.Container":                                     "k8s.io/api/core/v1",
		"vendor/golang.org/x/net/http2/hpack.(*Decoder).Write":                      "vendor/golang.org/x/net/http2/hpack",
		"text/template.(*state).evalField":                                          "text/template",
		"k8s.io/client-go/tools/cache.(*Reflector).ListAndWatchWithContext.func1.1": "k8s.io/client-go/tools/cache",
	} {
		if got := symbolPackage(name); got != want {
			t.Errorf("symbolPackage(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestTabulate splits two resident pages among overlapping spans: the
// smaller span wins a byte, bytes of no span count for their section, a
// page of another file counts only in the totals, and -by module folds
// packages into their module.
func TestTabulate(t *testing.T) {
	const text, rodata = 0x401000, 0x403000
	im := &image{
		sections: []section{
			{name: ".text", start: text, end: text + 2*pageSize, class: "text"},
			{name: ".rodata", start: rodata, end: rodata + pageSize, class: "rodata"},
		},
		spans: []span{
			{start: text, end: text + 1000, pkg: "k8s.io/api/core/v1"},
			{start: text + 1000, end: text + 3000, pkg: "k8s.io/api/apps/v1"},
			// A block over the rest of the page, with a smaller span inside.
			{start: text + 3000, end: text + pageSize, pkg: "(go:func)"},
			{start: text + 3500, end: text + 3600, pkg: "github.com/spf13/cobra"},
			// The second text page is not resident.
			{start: text + pageSize, end: text + 2*pageSize, pkg: "net/http"},
			{start: rodata + 96, end: rodata + 4000, pkg: "k8s.io/api/core/v1"},
		},
		modules: []string{"github.com/spf13/cobra", "k8s.io/api"},
	}
	snap := &snapshot{
		status: map[string]uint64{"RssFile": 12},
		mappings: []mapping{
			{start: text - pageSize, end: text + 2*pageSize, exe: true, path: "/bin/x", resident: []uint64{text}},
			{start: rodata, end: rodata + pageSize, exe: true, path: "/bin/x", resident: []uint64{rodata}},
			{start: 0x7f0000000000, end: 0x7f0000001000, path: "/lib/libc.so.6", resident: []uint64{0x7f0000000000}},
		},
	}
	got := map[string]map[string]uint64{}
	tb := tabulate(im, snap, "package")
	for _, r := range tb.rows {
		got[r.name] = r.bytes
	}
	want := map[string]map[string]uint64{
		"k8s.io/api/core/v1":     {"text": 1000, "rodata": 3904},
		"k8s.io/api/apps/v1":     {"text": 2000},
		"(go:func)":              {"text": pageSize - 3000 - 100},
		"github.com/spf13/cobra": {"text": 100},
		"(.rodata)":              {"rodata": 96 + pageSize - 4000},
	}
	if len(got) != len(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	for name, w := range want {
		for c, n := range w {
			if got[name][c] != n {
				t.Errorf("%s %s: %d bytes, want %d", name, c, got[name][c], n)
			}
		}
	}
	if tb.total["text"] != pageSize || tb.total["rodata"] != pageSize {
		t.Errorf("totals %v, want one page of each", tb.total)
	}
	if tb.pages != 3 || tb.exePages != 2 || tb.other["libc.so.6"] != 1 {
		t.Errorf("pages %d, of the binary %d, other %v; want 3, 2, libc 1", tb.pages, tb.exePages, tb.other)
	}
	if tb.rows[0].name != "k8s.io/api/core/v1" {
		t.Errorf("first row %s, want the largest, k8s.io/api/core/v1", tb.rows[0].name)
	}

	byModule := map[string]uint64{}
	for _, r := range tabulate(im, snap, "module").rows {
		byModule[r.name] = r.total()
	}
	if byModule["k8s.io/api"] != 1000+3904+2000 || byModule["github.com/spf13/cobra"] != 100 {
		t.Errorf("by module %v", byModule)
	}
}

// TestRunSleeper measures a real process: a program built here with its
// symbols that sleeps. Its resident file pages come from pagemap and must
// add up to the kernel's RssFile, and its rows to the binary's pages.
func TestRunSleeper(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"time\"\n\nfunc main() { time.Sleep(time.Minute) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sleeper")
	build := exec.Command("go", "build", "-o", bin, src)
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	im, err := loadImage(bin)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	time.Sleep(300 * time.Millisecond)
	snap, err := readProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	tb := tabulate(im, snap, "package")
	if tb.exePages == 0 {
		t.Fatal("no resident page of the binary")
	}
	// RssFile is the kernel's counter; pagemap is read a moment later.
	if got, want := tb.pages*pageSize/1024, snap.status["RssFile"]; got+256 < want || got > want+256 {
		t.Errorf("pagemap's resident file pages %d kB, RssFile %d kB", got, want)
	}
	var sum uint64
	runtimeSeen := false
	for _, r := range tb.rows {
		sum += r.total()
		runtimeSeen = runtimeSeen || (r.name == "runtime" && r.bytes["text"] > 0)
	}
	if sum != tb.exePages*pageSize {
		t.Errorf("rows add up to %d bytes, resident pages of the binary are %d", sum, tb.exePages*pageSize)
	}
	if !runtimeSeen {
		t.Error("no resident text of package runtime")
	}
	var out strings.Builder
	tb.write(&out, 5, []string{bin})
	if !strings.Contains(out.String(), "the binary") {
		t.Errorf("table without its total:\n%s", out.String())
	}
}
