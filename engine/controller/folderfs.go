package controller

import (
	"bytes"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// folderFS is a ConfigMap's keys as the files of a kind folder: flat (a
// key cannot hold a slash, so there are no sub-directories) and read-only.
// It stands where testing/fstest.MapFS stood, which linked the testing
// package into the operator.
type folderFS map[string][]byte

var (
	_ fs.ReadDirFS  = folderFS(nil)
	_ fs.ReadFileFS = folderFS(nil)
	_ fs.StatFS     = folderFS(nil)
)

// configMapFS is cm's keys, Data and BinaryData, as a folder.
func configMapFS(cm *corev1.ConfigMap) folderFS {
	fsys := make(folderFS, len(cm.Data)+len(cm.BinaryData))
	for name, data := range cm.Data {
		fsys[name] = []byte(data)
	}
	for name, data := range cm.BinaryData {
		fsys[name] = data
	}
	return fsys
}

// Open implements fs.FS.
func (f folderFS) Open(name string) (fs.File, error) {
	if name == "." {
		return &folderDir{info: dirInfo, entries: f.entries()}, nil
	}
	data, err := f.lookup("open", name)
	if err != nil {
		return nil, err
	}
	return &folderFile{info: fileInfo{name: name, size: int64(len(data))}, Reader: bytes.NewReader(data)}, nil
}

// ReadFile implements fs.ReadFileFS; the caller owns the result.
func (f folderFS) ReadFile(name string) ([]byte, error) {
	data, err := f.lookup("read", name)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(data), nil
}

// ReadDir implements fs.ReadDirFS: the folder's files, sorted by name.
func (f folderFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name != "." {
		if _, err := f.lookup("readdir", name); err != nil {
			return nil, err
		}
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid} // a file, not a directory
	}
	return f.entries(), nil
}

// Stat implements fs.StatFS.
func (f folderFS) Stat(name string) (fs.FileInfo, error) {
	if name == "." {
		return dirInfo, nil
	}
	data, err := f.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return fileInfo{name: name, size: int64(len(data))}, nil
}

func (f folderFS) lookup(op, name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	data, ok := f[name]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return data, nil
}

func (f folderFS) entries() []fs.DirEntry {
	out := make([]fs.DirEntry, 0, len(f))
	for name, data := range f {
		out = append(out, fs.FileInfoToDirEntry(fileInfo{name: name, size: int64(len(data))}))
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// fileInfo describes a file of the folder, or with dir the folder itself.
type fileInfo struct {
	name string
	size int64
	dir  bool
}

var dirInfo = fileInfo{name: ".", dir: true}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }
func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

// folderFile is an open file: its content, read, seeked or read at.
type folderFile struct {
	info fileInfo
	*bytes.Reader
}

func (f *folderFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *folderFile) Close() error               { return nil }

// folderDir is the open folder, listed in order by ReadDir.
type folderDir struct {
	info    fileInfo
	entries []fs.DirEntry
	next    int
}

func (d *folderDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *folderDir) Close() error               { return nil }
func (d *folderDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: ".", Err: fs.ErrInvalid} // a directory
}

// ReadDir implements fs.ReadDirFile.
func (d *folderDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.next:]
	if n <= 0 {
		d.next = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	rest = rest[:min(n, len(rest))]
	d.next += len(rest)
	return rest, nil
}
