package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// Fingerprint hashes the names and contents of a folder's top-level files:
// it changes exactly when reloading the folder could change what it renders.
func Fingerprint(dir string) (string, error) { return FingerprintFS(os.DirFS(dir)) }

// FingerprintFS is Fingerprint of a folder given as a file system (a
// directory, or a ConfigMap's keys).
func FingerprintFS(fsys fs.FS) (string, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return "", err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	h := sha256.New()
	for _, e := range entries {
		// Dotfiles are never read by the render (editor swap files, and the
		// ..data links of a mounted ConfigMap volume, which point at
		// directories); neither are sub-folders, symlinked or not.
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if fi, err := fs.Stat(fsys, e.Name()); err == nil && fi.IsDir() {
			continue
		}
		data, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return "", err
		}
		h.Write([]byte(e.Name()))
		h.Write([]byte{0})
		h.Write(data)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
