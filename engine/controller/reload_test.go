package controller

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/catalog"
)

// fakeFolders is a source of ready-made kinds.
type fakeFolders []*catalog.Kind

func (f fakeFolders) Load(Loading) ([]*catalog.Kind, []*catalog.FolderError, error) {
	return f, nil, nil
}

func folderOf(dir, group, kind string) *catalog.Kind {
	return &catalog.Kind{Name: dir, Dir: dir, GVK: schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}}
}

// TestLoadFoldersOneFolderPerKind: a kind once served is never taken by
// another folder, whatever the order of the sources or the names; among
// new folders the first wins; a refused folder names the one that serves.
func TestLoadFoldersOneFolderPerKind(t *testing.T) {
	widget := schema.GroupKind{Group: "e.io", Kind: "Widget"}
	cases := []struct {
		name    string
		sources []Folders
		served  map[string]schema.GroupKind
		want    []string // folders kept
		refused map[string]string
	}{
		{name: "new folders: the first source's wins",
			sources: []Folders{fakeFolders{folderOf("dir/widget", "e.io", "Widget")}, fakeFolders{folderOf("configmap/ns/aa-widget", "e.io", "Widget")}},
			want:    []string{"dir/widget"}, refused: map[string]string{"configmap/ns/aa-widget": "dir/widget"}},
		{name: "a served folder keeps its kind against an earlier-sorting newcomer",
			sources: []Folders{fakeFolders{folderOf("configmap/ns/aa-takeover", "e.io", "Widget"), folderOf("configmap/ns/team-widget", "e.io", "Widget")}},
			served:  map[string]schema.GroupKind{"configmap/ns/team-widget": widget},
			want:    []string{"configmap/ns/team-widget"}, refused: map[string]string{"configmap/ns/aa-takeover": "configmap/ns/team-widget"}},
		{name: "the served folder removed: the other takes the kind",
			sources: []Folders{fakeFolders{folderOf("configmap/ns/aa-takeover", "e.io", "Widget")}},
			served:  map[string]schema.GroupKind{"configmap/ns/team-widget": widget},
			want:    []string{"configmap/ns/aa-takeover"}},
		{name: "other kinds are not in conflict",
			sources: []Folders{fakeFolders{folderOf("a", "e.io", "Widget"), folderOf("b", "e.io", "Gadget"), folderOf("c", "f.io", "Widget")}},
			want:    []string{"a", "b", "c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := loadFolders(tc.sources, tc.served, Loading{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range f.kinds {
				got = append(got, k.Dir)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
			refused := map[string]string{}
			for _, s := range f.skipped {
				var c *KindConflictError
				if !errors.As(s.Err, &c) {
					t.Errorf("%s skipped with %v, want a KindConflictError", s.Dir, s.Err)
					continue
				}
				refused[s.Dir] = c.ServedBy
			}
			if len(refused) != len(tc.refused) {
				t.Errorf("refused %v, want %v", refused, tc.refused)
			}
			for dir, by := range tc.refused {
				if refused[dir] != by {
					t.Errorf("%s refused as served by %q, want %q", dir, refused[dir], by)
				}
			}
		})
	}
}

// recordingFolders is a source that remembers what its last Load returned.
type recordingFolders struct {
	Folders
	last map[string]*catalog.Kind
}

func (r *recordingFolders) Load(l Loading) ([]*catalog.Kind, []*catalog.FolderError, error) {
	kinds, skipped, err := r.Folders.Load(l)
	r.last = map[string]*catalog.Kind{}
	for _, k := range kinds {
		r.last[k.Dir] = k
	}
	return kinds, skipped, err
}

// TestSyncCompilesChangedFolders: a sync compiles a directory's folder
// only when its files changed since the last sync (their fingerprint); an
// unchanged folder is the Kind loaded before, and its kind keeps running.
func TestSyncCompilesChangedFolders(t *testing.T) {
	root := t.TempDir()
	for name, data := range widgetFolder {
		writeFile(t, filepath.Join(root, "widget", name), string(data))
	}
	writeFile(t, filepath.Join(root, "gadget", "kind.yaml"), "apiVersion: e.io/v1\nkind: Gadget\n")
	f := newFakeCluster(t)
	m, ctx := newTestManager(t, f, Options{})
	src := &recordingFolders{Folders: Dir(root)}
	sync := func() map[string]*catalog.Kind {
		t.Helper()
		if err := m.SyncFolders(ctx, src); err != nil {
			t.Fatal(err)
		}
		return src.last
	}
	widgetDir, gadgetDir := filepath.Join(root, "widget"), filepath.Join(root, "gadget")
	first := sync()
	if len(first) != 2 {
		t.Fatalf("loaded %v, want widget and gadget", first)
	}
	second := sync()
	for dir, k := range first {
		if second[dir] != k {
			t.Errorf("%s: compiled again, its files unchanged", dir)
		}
	}
	writeFile(t, filepath.Join(widgetDir, "configmap.yaml"), string(widgetFolder["configmap.yaml"])+"  changed: \"yes\"\n")
	third := sync()
	if third[widgetDir] == second[widgetDir] || third[widgetDir].Fingerprint == second[widgetDir].Fingerprint {
		t.Error("widget: its file changed, and the Kind of before was kept")
	}
	if third[gadgetDir] != second[gadgetDir] {
		t.Error("gadget: compiled again, its files unchanged")
	}
	m.mu.Lock()
	running := m.kinds[widgetGVK.GroupKind()].kind
	m.mu.Unlock()
	if running != third[widgetDir] {
		t.Error("the changed widget folder did not restart its kind")
	}
}
