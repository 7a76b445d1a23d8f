package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tmplop/operator/engine/layout"
)

// TestUnpackLimits: the count an archive unpacks against, at its edges:
// a chart of exactly what fits loads, one byte less refuses it, the
// largest limit is no limit's overflow, and Helm's path checks refuse what
// Helm's loader refuses.
func TestUnpackLimits(t *testing.T) {
	files := layout.Files{
		"Chart.yaml":        []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"),
	}
	archive, err := Pack("web", files)
	if err != nil {
		t.Fatal(err)
	}
	// What gunzip yields for it: the tar stream, headers and padding.
	exact := newUnpacker(math.MaxInt64)
	if _, err := exact.archive("web.tgz", archive); err != nil {
		t.Fatal(err)
	}
	size := math.MaxInt64 - exact.left
	cases := []struct {
		name  string
		limit int64
		data  []byte
		want  string // in the error; "" loads
	}{
		{name: "exactly what it unpacks to", limit: size, data: archive},
		{name: "a byte less", limit: size - 1, data: archive, want: "web.tgz: the chart unpacks to more than"},
		{name: "no end to it", limit: math.MaxInt64, data: archive},
		{name: "not gzip", limit: 1 << 20, data: []byte("kind.yaml, not an archive"), want: "web.tgz: gzip: invalid header"},
		{name: "a path out of the chart", limit: 1 << 20, data: packRaw(t, map[string]string{"web/../../etc/x": "x"}), want: "chart illegally references parent directory"},
		{name: "an absolute path", limit: 1 << 20, data: packRaw(t, map[string]string{"web//etc/x": "x"}), want: "chart illegally contains absolute paths"},
		{name: "Chart.yaml outside its folder", limit: 1 << 20, data: packRaw(t, map[string]string{"Chart.yaml": "x"}), want: "content outside the base directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(layout.Files{"web.tgz": tc.data}, Options{Archive: "web.tgz", MaxUnpacked: tc.limit})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			var ue *UnpackError
			if strings.Contains(tc.want, "unpacks to more") && (!errors.As(err, &ue) || ue.Limit != tc.limit) {
				t.Errorf("got %#v, want an *UnpackError of limit %d", err, tc.limit)
			}
		})
	}
}

// packRaw is a gzipped tar of the entries as named, which Pack would
// clean.
func packRaw(t *testing.T, entries map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, data := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestUnpackRefusesBeforeAllocating: an entry whose header says it holds
// more than is left is refused before its buffer is made: refusing a file
// of 4 MiB (within Helm's limit of a file) allocates a small part of it.
func TestUnpackRefusesBeforeAllocating(t *testing.T) {
	data := packRaw(t, map[string]string{
		"web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"web/files/big":  strings.Repeat("\x00", 4<<20),
	})
	var err error
	alloc := allocated(1, func() {
		_, err = Load(layout.Files{"web.tgz": data}, Options{Archive: "web.tgz", MaxUnpacked: 1 << 20})
	})
	if err == nil || !strings.Contains(err.Error(), "web.tgz: files/big: the chart unpacks to more than 1048576 bytes") {
		t.Fatalf("got %v", err)
	}
	if alloc > 1<<20 {
		t.Errorf("refusing it allocated %d bytes", alloc)
	}
}
