package main

import (
	"debug/buildinfo"
	"debug/elf"
	"debug/gosym"
	"os"
	"slices"
	"strings"
	"testing"
)

// linkedHeavy are what the bench links for itself (charts, the plots, the
// conversion bench) and a client must not: their file pages would count in
// the client's peak RSS. By module path, and by package path prefix for
// the operator's own packages (a client imports engine/ownership for the
// hash, nothing that renders).
var linkedHeavy = []string{
	"helm.sh/helm/",
	"gonum.org/v1/",
	"k8s.io/apiextensions-apiserver",
	"github.com/santhosh-tekuri/jsonschema",
	"github.com/Masterminds/sprig",
	"github.com/tmplop/operator/test/",
	"github.com/tmplop/operator/engine/render",
	"github.com/tmplop/operator/engine/chart",
}

// heavyLinked returns what of linkedHeavy the binary at path links: the
// modules its build information lists, and the packages its functions are
// of.
func heavyLinked(t *testing.T, path string) []string {
	t.Helper()
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatalf("build information of %s: %v", path, err)
	}
	var paths []string
	for _, d := range info.Deps {
		paths = append(paths, d.Path)
	}
	// The functions' names from the pclntab, which a stripped binary (a
	// test binary) keeps too.
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		t.Fatalf("%s: no .gopclntab or .text section", path)
	}
	data, err := pcln.Data()
	if err != nil {
		t.Fatalf("pclntab of %s: %v", path, err)
	}
	table, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		t.Fatalf("pclntab of %s: %v", path, err)
	}
	for _, fn := range table.Funcs {
		paths = append(paths, fn.Name)
	}
	var found []string
	for _, heavy := range linkedHeavy {
		if slices.ContainsFunc(paths, func(p string) bool { return strings.HasPrefix(p, heavy) }) {
			found = append(found, heavy)
		}
	}
	return found
}

// TestClientsLinkOnlyWhatTheyNeed builds the limit and the hand-written
// controller as the bench does and reads what they link: none of what the
// bench links for itself. The bench's own code (this test binary) links
// all of it, which shows the check sees it.
func TestClientsLinkOnlyWhatTheyNeed(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"helm.sh/helm/", "gonum.org/v1/", "k8s.io/apiextensions-apiserver", "github.com/santhosh-tekuri/jsonschema"} {
		if !slices.Contains(heavyLinked(t, self), want) {
			t.Errorf("the bench's test binary does not link %s: the check does not see what it looks for", want)
		}
	}
	bins, err := buildClients(t.Context(), t.TempDir(), "limit", "controller")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"limit", "controller"} {
		if found := heavyLinked(t, bins[name]); len(found) > 0 {
			t.Errorf("the %s's binary links %s", name, strings.Join(found, ", "))
		}
		if fi, err := os.Stat(bins[name]); err == nil {
			t.Logf("%s: %.1f MiB", name, float64(fi.Size())/(1<<20))
		}
	}
}
