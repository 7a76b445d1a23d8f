package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"path"

	"github.com/tmplop/operator/engine/layout"
)

// Pack packages a chart's files (Read's) as helm package lays them out, a
// gzipped tar under the folder name: what a ConfigMap folder carries,
// whose keys cannot hold sub-folders. The bytes depend on the files alone
// (names sorted, no times, no owners), so that a packaged copy kept in a
// repository can be checked against its folder byte for byte.
func Pack(name string, files layout.Files) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files.Names() {
		hdr := &tar.Header{Name: path.Join(name, f), Mode: 0o644, Size: int64(len(files[f])), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("pack %s: %w", f, err)
		}
		if _, err := tw.Write(files[f]); err != nil {
			return nil, fmt.Errorf("pack %s: %w", f, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
