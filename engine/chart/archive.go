package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
)

// DefaultMaxUnpacked is what a chart's archives may unpack to, all of
// them together: the packaged chart of a ConfigMap folder and every
// subchart archive (charts/*.tgz) in it or in a chart folder, at any
// depth. A ConfigMap holds at most 1 MiB, and the YAML and JSON of real
// charts compress 4 to 8 times (the largest common charts, with their
// CRDs and dashboards, unpack to a few MiB): 16 MiB leaves room for
// those, where a 1 MiB archive of zeros would unpack to a GiB. Helm's own
// limit, 100 MiB per archive, is counted again for each nested archive.
const DefaultMaxUnpacked int64 = 16 << 20

// UnpackError is a chart whose archives would unpack to more than the
// limit: refused as soon as the count passes it, before what would not
// fit is allocated.
type UnpackError struct {
	// Archive is the archive being unpacked, nested ones after the one
	// that holds them ("web-0.1.0.tgz: charts/db-1.0.0.tgz").
	Archive string
	// File is the archive's entry at which the limit was passed.
	File  string
	Limit int64
}

func (e *UnpackError) Error() string {
	where := e.Archive
	if e.File != "" {
		where += ": " + e.File
	}
	return fmt.Sprintf("%s: the chart unpacks to more than %d bytes, its archives and their nested subchart archives together (run --chart-max-unpacked)", where, e.Limit)
}

// errTooLarge is what the counting reader returns once the limit is
// passed; unpacker turns it into an *UnpackError naming the entry.
var errTooLarge = errors.New("unpacked size limit passed")

// unpacker unpacks a chart's archives against one count of bytes, left,
// shared by every archive of the chart, nested ones included.
type unpacker struct {
	limit, left int64
}

func newUnpacker(limit int64) *unpacker {
	if limit <= 0 {
		limit = DefaultMaxUnpacked
	}
	return &unpacker{limit: limit, left: limit}
}

// take charges n unpacked bytes, or fails past the limit.
func (u *unpacker) take(n int64) error {
	if n > u.left {
		u.left = -1
		return errTooLarge
	}
	u.left -= n
	return nil
}

// counted charges every byte gunzip yields, tar headers and padding and
// skipped entries included: what unpacking costs in CPU is bounded as
// what it keeps in memory is.
type counted struct {
	r io.Reader
	u *unpacker
}

func (c *counted) Read(p []byte) (int, error) {
	if c.u.left < 0 {
		return 0, errTooLarge
	}
	// Never more than one byte past the limit is read, so that the
	// refusal comes before gzip inflates what would not fit.
	if rest := c.u.left + 1; rest > 0 && int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	if terr := c.u.take(int64(n)); terr != nil {
		return n, terr
	}
	return n, err
}

// utf8BOM is trimmed from every file, as Helm's loader does.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

var drivePath = regexp.MustCompile(`^[a-zA-Z]:/`)

// archive reads the files of one chart archive as loader.LoadArchiveFiles
// does (the same path checks, names without the top folder, Helm's limit
// per file), each file's size charged before it is allocated. name names
// the archive in errors.
func (u *unpacker) archive(name string, data []byte) ([]*loader.BufferedFile, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer zr.Close()
	tr := tar.NewReader(&counted{r: zr, u: u})
	var files []*loader.BufferedFile
	for {
		hd, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, u.fail(name, "", err)
		}
		if hd.FileInfo().IsDir() || hd.Typeflag == tar.TypeXGlobalHeader || hd.Typeflag == tar.TypeXHeader {
			continue
		}
		n, err := entryName(hd.Name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if hd.Size > loader.MaxDecompressedFileSize {
			return nil, fmt.Errorf("%s: decompressed chart file %q is larger than the maximum file size %d", name, hd.Name, loader.MaxDecompressedFileSize)
		}
		// Refused before the buffer is made: the header's size is what
		// the entry holds once read, holes of a sparse file included.
		if hd.Size < 0 || hd.Size > u.left {
			return nil, &UnpackError{Archive: name, File: n, Limit: u.limit}
		}
		before := u.left
		buf := make([]byte, hd.Size)
		if _, err := io.ReadFull(tr, buf); err != nil {
			return nil, u.fail(name, n, err)
		}
		// A sparse entry holds more than gunzip yielded for it: charge
		// the rest, so that what is kept is counted too.
		if read := before - u.left; read < hd.Size {
			if err := u.take(hd.Size - read); err != nil {
				return nil, u.fail(name, n, err)
			}
		}
		files = append(files, &loader.BufferedFile{Name: n, Data: bytes.TrimPrefix(buf, utf8BOM)})
	}
	if u.left < 0 {
		// Passed on the archive's last read, which tar took whole.
		return nil, &UnpackError{Archive: name, Limit: u.limit}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no files in chart archive", name)
	}
	return files, nil
}

// fail is err of the archive name at entry file: the limit's error when
// the count passed it.
func (u *unpacker) fail(name, file string, err error) error {
	if errors.Is(err, errTooLarge) || u.left < 0 {
		return &UnpackError{Archive: name, File: file, Limit: u.limit}
	}
	if file != "" {
		return fmt.Errorf("%s: %s: %w", name, file, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// entryName is the name of a file of a chart archive in the chart, with
// loader.LoadArchiveFiles' checks: within the chart's top folder, no
// absolute path, no parent reference, no drive letter.
func entryName(name string) (string, error) {
	delimiter := "/"
	if strings.ContainsRune(name, '\\') {
		delimiter = "\\"
	}
	parts := strings.Split(name, delimiter)
	n := strings.ReplaceAll(strings.Join(parts[1:], delimiter), delimiter, "/")
	switch {
	case path.IsAbs(n):
		return "", errors.New("chart illegally contains absolute paths")
	case path.Clean(n) == ".":
		return "", fmt.Errorf("chart illegally contains content outside the base directory: %q", name)
	case strings.HasPrefix(path.Clean(n), ".."):
		return "", errors.New("chart illegally references parent directory")
	case drivePath.MatchString(path.Clean(n)):
		return "", errors.New("chart contains illegally named files")
	case parts[0] == File:
		return "", errors.New("chart yaml not in base directory")
	}
	return path.Clean(n), nil
}

// unpackedSuffix names the folder a subchart archive is unpacked into,
// beside it in charts/: not a `.tgz`, which Helm's loader would unpack
// again, and not a name Helm skips (`_*`, `.*`).
const unpackedSuffix = ".unpacked"

// nested unpacks every subchart archive of files (charts/NAME.tgz, in the
// chart or in a subchart folder at any depth) into a folder of its own,
// charts/NAME.tgz.unpacked, against u's count: loader.LoadFiles then
// loads it as the subchart folder it is, and never unpacks an archive
// itself, where Helm's limit would be renewed for each. Which files are
// subcharts follows loader.LoadFiles: charts/ entries but `.prov` files
// and names starting with `_` or `.`. where names the archive that holds
// files, dir their folder in it, in errors.
func (u *unpacker) nested(where, dir string, files []*loader.BufferedFile) ([]*loader.BufferedFile, error) {
	out := make([]*loader.BufferedFile, 0, len(files))
	folders := map[string][]*loader.BufferedFile{}
	var order []string
	for _, f := range files {
		rest, ok := strings.CutPrefix(f.Name, "charts/")
		if !ok || path.Ext(f.Name) == ".prov" {
			out = append(out, f)
			continue
		}
		sub, _, _ := strings.Cut(rest, "/")
		if strings.IndexAny(sub, "_.") == 0 {
			out = append(out, f) // Helm loads none of it
			continue
		}
		if _, ok := folders[sub]; !ok {
			order = append(order, sub)
		}
		folders[sub] = append(folders[sub], f)
	}
	for _, sub := range order {
		fs := folders[sub]
		at := prefixOf(where) + dir + "charts/" + sub
		if path.Ext(sub) == ".tgz" {
			if len(fs) != 1 || fs[0].Name != "charts/"+sub {
				return nil, fmt.Errorf("%s: a subchart archive and files under its name", at)
			}
			if _, ok := folders[sub+unpackedSuffix]; ok {
				return nil, fmt.Errorf("%s: a folder %s%s is there already", at, sub, unpackedSuffix)
			}
			inner, err := u.archive(at, fs[0].Data)
			if err != nil {
				return nil, err
			}
			if inner, err = u.nested(at, "", inner); err != nil {
				return nil, err
			}
			for _, f := range inner {
				out = append(out, &loader.BufferedFile{Name: "charts/" + sub + unpackedSuffix + "/" + f.Name, Data: f.Data})
			}
			continue
		}
		inner := make([]*loader.BufferedFile, 0, len(fs))
		for _, f := range fs {
			name, ok := strings.CutPrefix(f.Name, "charts/"+sub+"/")
			if !ok {
				out = append(out, f) // a file named charts/NAME: no chart, as for Helm
				continue
			}
			inner = append(inner, &loader.BufferedFile{Name: name, Data: f.Data})
		}
		inner, err := u.nested(where, dir+"charts/"+sub+"/", inner)
		if err != nil {
			return nil, err
		}
		for _, f := range inner {
			out = append(out, &loader.BufferedFile{Name: "charts/" + sub + "/" + f.Name, Data: f.Data})
		}
	}
	return out, nil
}

// prefixOf is where, as the start of a path in an error.
func prefixOf(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}
