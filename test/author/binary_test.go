package author

import (
	"debug/elf"
	"strings"
	"testing"
)

// TestBinaryLinksNoUnusedClients guards the operator's resident memory:
// text/template's MethodByName turns off the linker's pruning of methods,
// so one *kubernetes.Clientset stored in an interface (an informer factory,
// a leader election client) links every typed client, lister and informer
// of every API group: 26 MB more binary and 11 MiB more RSS before any
// work (docs/performance.md, "The binary"). Use the typed client of the one
// group needed instead.
func TestBinaryLinksNoUnusedClients(t *testing.T) {
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	unwanted := []string{
		"k8s.io/client-go/informers/",
		"k8s.io/client-go/listers/",
		"k8s.io/client-go/applyconfigurations/apps/",
	}
	found := map[string]string{}
	for _, s := range syms {
		for _, p := range unwanted {
			if strings.HasPrefix(s.Name, p) && found[p] == "" {
				found[p] = s.Name
			}
		}
	}
	for p, example := range found {
		t.Errorf("the operator binary links %s... (for example %s): a clientset or informer factory behind an interface?", p, example)
	}
}
