package render

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/engine/render/internal/fastyaml"
	"github.com/tmplop/operator/internal/testsupport/fakelookup"
)

// TestFastDecodeAcceptsExamples: every document the shipped examples render
// takes the fast path (a decline would be a lost speed-up, not a bug), and
// so do most of the golden cases here, which exercise stranger output.
// That what it gives is what yaml.v2 gives is fastyaml's to check: these
// documents are seeds of its FuzzFastDecode.
func TestFastDecodeAcceptsExamples(t *testing.T) {
	for _, src := range renderedDocuments(t) {
		t.Logf("%s: %d documents", src.name, len(src.docs))
		for i, doc := range src.docs {
			if _, ok := fastyaml.DecodeFast([]byte(doc)); ok {
				continue
			}
			if src.shipped {
				t.Errorf("%s document %d declined:\n%s", src.name, i, doc)
			} else {
				t.Logf("%s document %d declined", src.name, i)
			}
		}
	}
}

// renderedSource is the documents one template folder renders.
type renderedSource struct {
	name    string
	shipped bool // a folder of templates/, whose documents must all be accepted
	docs    []string
}

// renderedDocuments renders the shipped examples (templates/, over their
// samples in examples/ and the live objects of test/examples/testdata) and
// the golden cases of testdata/, and returns the YAML documents that
// decodeValue is given, before any decoding.
func renderedDocuments(tb testing.TB) []renderedSource {
	tb.Helper()
	var out []renderedSource
	const examples = "../../test/examples/testdata"
	cluster := readObjects(tb, filepath.Join(examples, "cluster.yaml"))
	entries, err := os.ReadDir("../../templates")
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		if _, err := os.Stat(filepath.Join("../../templates", name, layout.ChartFile)); err == nil {
			// A chart renders only with its scopes (engine/chart, above
			// this package); test/examples takes its documents.
			continue
		}
		set, err := parseFolder(tb, os.DirFS(filepath.Join("../../templates", name)))
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		samples := readObjects(tb, filepath.Join("../../examples", name+".yaml"))
		if len(samples) != 1 {
			tb.Fatalf("examples/%s.yaml: want one object, got %d", name, len(samples))
		}
		obj := samples[0]
		meta, _ := obj["metadata"].(map[string]any)
		if _, ok := meta["namespace"]; !ok {
			meta["namespace"] = "default"
		}
		in := Input{Object: obj, Now: fixedNow, Lookup: &fakelookup.Objects{Items: cluster},
			Children: childrenByKind(readObjects(tb, filepath.Join(examples, name, "live.yaml")))}
		out = append(out, renderedSource{name: "templates/" + name, shipped: true, docs: rawDocuments(tb, set, in)})
	}

	cases, err := os.ReadDir("testdata")
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range cases {
		if !c.IsDir() || c.Name() == "fuzz" {
			continue
		}
		dir := filepath.Join("testdata", c.Name())
		fsys := templateFS(tb, dir)
		set, err := parseFolder(tb, fsys)
		if err != nil {
			tb.Fatalf("%s: %v", dir, err)
		}
		objs := readObjects(tb, filepath.Join(dir, objectFixture))
		in := Input{Object: objs[0], Now: fixedNow, Children: childrenByKind(readObjects(tb, filepath.Join(dir, childrenFixture)))}
		if objs := readObjects(tb, filepath.Join(dir, clusterFixture)); objs != nil {
			in.Lookup = &fakelookup.Objects{Items: objs}
		}
		out = append(out, renderedSource{name: dir, docs: rawDocuments(tb, set, in)})
	}
	return out
}

// rawDocuments renders set's children and status as Children and Status
// do, and returns the non-blank documents of their output.
func rawDocuments(tb testing.TB, set *Set, in Input) []string {
	tb.Helper()
	var docs []string
	collect := func(r *render, file string) error {
		out, err := r.execute(file)
		if err != nil {
			return err
		}
		for _, doc := range SplitDocuments(out) {
			if !Blank(doc.Text) {
				docs = append(docs, string(doc.Text))
			}
		}
		return nil
	}
	_, err := set.run(context.Background(), in, false, func(r *render) (*Result, error) {
		for _, name := range set.children {
			if err := collect(r, name); err != nil {
				return nil, err
			}
		}
		return &Result{}, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if set.status {
		_, err = set.run(context.Background(), in, true, func(r *render) (*Result, error) {
			return &Result{}, collect(r, statusFile)
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return docs
}

// readObjects reads the objects of a YAML stream ('---' separated, or one
// list); nil when the file does not exist.
func readObjects(tb testing.TB, path string) []map[string]any {
	tb.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	var objs []map[string]any
	for _, doc := range SplitDocuments(data) {
		if Blank(doc.Text) {
			continue
		}
		v, err := decodeValue(doc.Text)
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		switch v := v.(type) {
		case map[string]any:
			objs = append(objs, v)
		case []any:
			for _, o := range v {
				objs = append(objs, o.(map[string]any))
			}
		}
	}
	return objs
}
