package chart

import (
	"bytes"
	"maps"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/tmplop/operator/engine/layout"
)

// TestPack: a packed chart loads with Helm's loader as its folder does,
// and packing the same files twice gives the same bytes.
func TestPack(t *testing.T) {
	files := layout.Files{
		"Chart.yaml":             []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
		"values.yaml":            []byte("size: 1\n"),
		"templates/cm.yaml":      []byte("kind: ConfigMap\n"),
		"templates/_helpers.tpl": []byte(`{{ define "x" }}{{ end }}`),
		"files/a.conf":           []byte("a"),
	}
	a, err := Pack("web", files)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Pack("web", maps.Clone(files))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two packs of the same files differ")
	}
	buffered, err := loader.LoadArchiveFiles(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	got := layout.Files{}
	for _, f := range buffered {
		got[f.Name] = f.Data
	}
	if !maps.EqualFunc(got, files, bytes.Equal) {
		t.Fatalf("unpacked %q, want %q", got.Names(), files.Names())
	}
	if _, err := loader.LoadArchive(bytes.NewReader(a)); err != nil {
		t.Fatalf("Helm's loader: %v", err)
	}
}
