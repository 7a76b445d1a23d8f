package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// notifyWithin is the promise of DirWatcher: a change is told within this.
const notifyWithin = time.Second

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// quiet drains the notifications of what was done so far, so that the next
// expectation is about the next step only.
func quiet(d *DirWatcher) {
	for {
		select {
		case <-d.Changed():
		case <-time.After(100 * time.Millisecond):
			return
		}
	}
}

func expectNotified(t *testing.T, d *DirWatcher, what string, step func()) {
	t.Helper()
	quiet(d)
	start := time.Now()
	step()
	select {
	case <-d.Changed():
		t.Logf("%s: notified after %s", what, time.Since(start).Round(time.Microsecond))
	case <-time.After(notifyWithin):
		t.Fatalf("%s: no notification within %s", what, notifyWithin)
	}
}

func startWatch(t *testing.T, root string) *DirWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d, err := WatchDir(ctx, root)
	if err != nil {
		t.Fatalf("WatchDir: %v", err)
	}
	return d
}

func TestDirWatcher(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a", "kind.yaml"), "apiVersion: a.example.com/v1\nkind: A\n")
	d := startWatch(t, root)

	expectNotified(t, d, "file edited", func() {
		writeFile(t, filepath.Join(root, "a", "kind.yaml"), "apiVersion: a.example.com/v1\nkind: A\nworkers: 2\n")
	})
	expectNotified(t, d, "file added", func() {
		writeFile(t, filepath.Join(root, "a", "child.yaml"), "apiVersion: v1\nkind: ConfigMap\n")
	})
	expectNotified(t, d, "folder added", func() {
		if err := os.Mkdir(filepath.Join(root, "b"), 0o755); err != nil {
			t.Fatal(err)
		}
	})
	// The new folder is watched: a file written into it later is seen.
	expectNotified(t, d, "file in the new folder", func() {
		writeFile(t, filepath.Join(root, "b", "kind.yaml"), "apiVersion: b.example.com/v1\nkind: B\n")
	})
	expectNotified(t, d, "file chmod-ed", func() {
		if err := os.Chmod(filepath.Join(root, "b", "kind.yaml"), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	// An editor's save: a temporary file renamed over the old one.
	tmp := filepath.Join(root, "b", ".kind.yaml.tmp")
	writeFile(t, tmp, "apiVersion: b.example.com/v1\nkind: B\nworkers: 3\n")
	expectNotified(t, d, "file renamed over", func() {
		if err := os.Rename(tmp, filepath.Join(root, "b", "kind.yaml")); err != nil {
			t.Fatal(err)
		}
	})
	expectNotified(t, d, "file removed", func() {
		if err := os.Remove(filepath.Join(root, "a", "child.yaml")); err != nil {
			t.Fatal(err)
		}
	})
	expectNotified(t, d, "folder removed", func() {
		if err := os.RemoveAll(filepath.Join(root, "a")); err != nil {
			t.Fatal(err)
		}
	})
	// A folder removed and made again under the same name is watched again.
	expectNotified(t, d, "folder re-created", func() {
		writeFile(t, filepath.Join(root, "a", "kind.yaml"), "apiVersion: a.example.com/v1\nkind: A\n")
	})
	expectNotified(t, d, "file in the re-created folder", func() {
		writeFile(t, filepath.Join(root, "a", "kind.yaml"), "apiVersion: a.example.com/v1\nkind: A\nworkers: 4\n")
	})
	expectNotified(t, d, "folder renamed", func() {
		if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, "c")); err != nil {
			t.Fatal(err)
		}
	})
	expectNotified(t, d, "file in the renamed folder", func() {
		writeFile(t, filepath.Join(root, "c", "kind.yaml"), "apiVersion: a.example.com/v1\nkind: A\nworkers: 5\n")
	})
}

// kubeletVolume lays out dir as the kubelet does a ConfigMap volume: the
// files in a timestamped directory, `..data` a symlink to it, and each file a
// symlink through `..data`.
type kubeletVolume struct {
	t   *testing.T
	dir string
	gen int
}

func (v *kubeletVolume) tsDir() string {
	return filepath.Join(v.dir, "..2026_07_01_00_00_0"+string(rune('0'+v.gen)))
}

// prepare writes generation gen+1 into its own directory and the temporary
// symlink to it, as the kubelet does before the swap.
func (v *kubeletVolume) prepare(files map[string]string) {
	v.gen++
	for name, data := range files {
		writeFile(v.t, filepath.Join(v.tsDir(), name), data)
	}
	if err := os.Symlink(filepath.Base(v.tsDir()), filepath.Join(v.dir, "..data_tmp")); err != nil {
		v.t.Fatal(err)
	}
}

// swap renames `..data_tmp` over `..data`: the atomic update.
func (v *kubeletVolume) swap() {
	if err := os.Rename(filepath.Join(v.dir, "..data_tmp"), filepath.Join(v.dir, "..data")); err != nil {
		v.t.Fatal(err)
	}
}

// links makes the visible names symlinks through `..data`.
func (v *kubeletVolume) links(names ...string) {
	for _, n := range names {
		if err := os.Symlink(filepath.Join("..data", n), filepath.Join(v.dir, n)); err != nil && !os.IsExist(err) {
			v.t.Fatal(err)
		}
	}
}

// cleanOld removes the previous generation, as the kubelet does after the swap.
func (v *kubeletVolume) cleanOld() {
	old := filepath.Join(v.dir, "..2026_07_01_00_00_0"+string(rune('0'+v.gen-1)))
	if err := os.RemoveAll(old); err != nil {
		v.t.Fatal(err)
	}
}

func TestDirWatcherConfigMapVolumeSwap(t *testing.T) {
	t.Run("a folder is the volume", func(t *testing.T) {
		root := t.TempDir()
		v := &kubeletVolume{t: t, dir: filepath.Join(root, "memcached")}
		v.prepare(map[string]string{"kind.yaml": "apiVersion: a.example.com/v1\nkind: A\n"})
		v.swap()
		v.links("kind.yaml")
		d := startWatch(t, root)

		for i := range 3 {
			v.prepare(map[string]string{"kind.yaml": "apiVersion: a.example.com/v1\nkind: A\nworkers: " + string(rune('2'+i)) + "\n"})
			expectNotified(t, d, "..data swapped", v.swap)
			expectNotified(t, d, "old generation removed", v.cleanOld)
			got, err := os.ReadFile(filepath.Join(v.dir, "kind.yaml"))
			if err != nil || len(got) == 0 {
				t.Fatalf("read kind.yaml through ..data: %q, %v", got, err)
			}
		}
	})
	t.Run("the templates directory is the volume", func(t *testing.T) {
		// A projected volume with items memcached/kind.yaml: the folders
		// are symlinks through the root's `..data`.
		root := t.TempDir()
		v := &kubeletVolume{t: t, dir: root}
		v.prepare(map[string]string{"memcached/kind.yaml": "apiVersion: a.example.com/v1\nkind: A\n"})
		v.swap()
		v.links("memcached")
		d := startWatch(t, root)

		for i := range 3 {
			v.prepare(map[string]string{
				"memcached/kind.yaml":  "apiVersion: a.example.com/v1\nkind: A\nworkers: " + string(rune('2'+i)) + "\n",
				"memcached/child.yaml": "apiVersion: v1\nkind: ConfigMap\n"})
			expectNotified(t, d, "..data swapped", v.swap)
			expectNotified(t, d, "old generation removed", v.cleanOld)
		}
		// The folder's watch followed the swaps: a write into the current
		// generation (not something the kubelet does, but a proof that the
		// folder symlink's target is watched) is seen.
		expectNotified(t, d, "file written in the current generation", func() {
			writeFile(t, filepath.Join(v.tsDir(), "memcached", "kind.yaml"), "apiVersion: a.example.com/v1\nkind: A\n")
		})
	})
}
