package revision

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/layout"
	"github.com/tmplop/operator/internal/testsupport/revisiontest"
)

const ns = "operator-system"

var memcacheds = schema.GroupResource{Group: "cache.example.com", Resource: "memcacheds"}

// folder is a folder whose one template says v: a fingerprint per v.
func folder(v string) (string, layout.Files) {
	f := layout.Files{"kind.yaml": []byte("apiVersion: cache.example.com/v1\nkind: Memcached\n"), "a.yaml": []byte(v)}
	return f.Fingerprint(), f
}

// fakeStore is a Store over a fake clientset, and the clientset.
func fakeStore(t *testing.T, objs ...runtime.Object) (*Store, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	c := kube.NewForClients(kube.Clients{Revisions: revisiontest.Typed{Getter: cs.AppsV1()}}, "tmplop-operator")
	s := New(c, ns, testManager)
	s.pause = func(context.Context, int) {}
	return s, cs
}

// existing is a record as Ensure would have made it.
func existing(t *testing.T, v string, number int64) *appsv1.ControllerRevision {
	t.Helper()
	fp, files := folder(v)
	name, err := Name(memcacheds, testManager, fp)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Encode(files)
	if err != nil {
		t.Fatal(err)
	}
	r := record(ns, name, "tmplop-operator", memcacheds, fp, number, data)
	r.UID = types.UID("uid-" + v)
	r.CreationTimestamp = metav1.NewTime(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	r.ResourceVersion = "1"
	return r
}

// writes counts the create, update and delete actions of cs.
func writes(cs *fake.Clientset) (n int) {
	for _, a := range cs.Actions() {
		switch a.GetVerb() {
		case "create", "update", "delete", "patch":
			n++
		}
	}
	return n
}

// numbers are the kind's records as fingerprint version -> number.
func numbers(t *testing.T, s *Store, versions ...string) map[string]int64 {
	t.Helper()
	revs, err := s.List(t.Context(), memcacheds)
	if err != nil {
		t.Fatal(err)
	}
	byFP := map[string]string{}
	for _, v := range versions {
		fp, _ := folder(v)
		byFP[fp] = v
	}
	out := map[string]int64{}
	for _, r := range revs {
		out[byFP[r.Fingerprint]] = r.Number
	}
	return out
}

// TestEnsure: a folder's record is found with no write, created with the
// next number, renumbered past the others when served again or when its
// number is another's too.
func TestEnsure(t *testing.T) {
	for _, tc := range []struct {
		name       string
		have       map[string]int64 // version -> number
		older      string           // the record created a second before the others
		ensure     string
		want       int64
		wantWrites int
		after      map[string]int64
	}{
		{name: "first revision", ensure: "v1", want: 1, wantWrites: 1, after: map[string]int64{"v1": 1}},
		{name: "unchanged folder: found, no write", have: map[string]int64{"v1": 1, "v2": 2}, ensure: "v2", want: 2,
			after: map[string]int64{"v1": 1, "v2": 2}},
		{name: "changed folder: the next number", have: map[string]int64{"v1": 1, "v2": 2}, ensure: "v3", want: 3, wantWrites: 1,
			after: map[string]int64{"v1": 1, "v2": 2, "v3": 3}},
		{name: "a folder served again keeps its number", have: map[string]int64{"v1": 1, "v2": 2}, ensure: "v1", want: 1,
			after: map[string]int64{"v1": 1, "v2": 2}},
		{name: "a number taken twice, ours the newer: ours moves", have: map[string]int64{"v1": 1, "v2": 2, "v3": 2}, older: "v3", ensure: "v2", want: 3, wantWrites: 1,
			after: map[string]int64{"v1": 1, "v2": 3, "v3": 2}},
		{name: "a number taken twice, ours the older: ours keeps it", have: map[string]int64{"v1": 1, "v2": 2, "v3": 2}, older: "v2", ensure: "v2", want: 2,
			after: map[string]int64{"v1": 1, "v2": 2, "v3": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for v, n := range tc.have {
				r := existing(t, v, n)
				if v == tc.older {
					r.CreationTimestamp = metav1.NewTime(r.CreationTimestamp.Add(-time.Second))
				}
				objs = append(objs, r)
			}
			s, cs := fakeStore(t, objs...)
			fp, files := folder(tc.ensure)
			rev, err := s.Ensure(t.Context(), memcacheds, fp, files)
			if err != nil {
				t.Fatal(err)
			}
			if rev.Number != tc.want || rev.Fingerprint != fp || !strings.HasPrefix(rev.Name, "memcacheds.cache.example.com-") {
				t.Errorf("Ensure = %+v, want number %d of %s", rev, tc.want, fp)
			}
			if got := writes(cs); got != tc.wantWrites {
				t.Errorf("%d writes, want %d: %v", got, tc.wantWrites, cs.Actions())
			}
			vs := []string{"v1", "v2", "v3"}
			if got := numbers(t, s, vs...); fmt.Sprint(got) != fmt.Sprint(tc.after) {
				t.Errorf("records %v, want %v", got, tc.after)
			}
			// Again: nothing to do.
			before := writes(cs)
			if again, err := s.Ensure(t.Context(), memcacheds, fp, files); err != nil || again != rev {
				t.Errorf("Ensure again = %+v, %v; want %+v", again, err, rev)
			}
			if writes(cs) != before {
				t.Errorf("Ensure of the newest record wrote")
			}
		})
	}
}

// TestEnsureRecord: the record's labels, annotations and files; a large
// folder is gzipped and reads back; one too large for a record is
// recorded without its files.
func TestEnsureRecord(t *testing.T) {
	big := func(n int) layout.Files {
		f := layout.Files{"kind.yaml": []byte("kind: X\n")}
		for i := range n {
			// Text that gzip cannot shrink much: hex of a counter's hash.
			var b strings.Builder
			for j := range 2000 {
				fmt.Fprintf(&b, "%x\n", (uint64(i)*2654435761+uint64(j)*40503)*0x9E3779B97F4A7C15)
			}
			f[fmt.Sprintf("t%03d.yaml", i)] = []byte(b.String())
		}
		return f
	}
	for _, tc := range []struct {
		name    string
		files   layout.Files
		gzipped bool
		omitted bool
	}{
		{name: "small folder as JSON", files: layout.Files{"kind.yaml": []byte("kind: X\n"), "a.yaml": []byte("a: 1\n"), "chart.tgz": {0x1f, 0x8b, 0xff, 0x00}}},
		{name: "large folder gzipped", files: layout.Files{"kind.yaml": []byte("kind: X\n"), "a.yaml": []byte(strings.Repeat("a: 1\n", 100000))}, gzipped: true},
		{name: "too large: recorded without files", files: big(150), omitted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, cs := fakeStore(t)
			fp := tc.files.Fingerprint()
			rev, err := s.Ensure(t.Context(), memcacheds, fp, tc.files)
			if err != nil {
				t.Fatal(err)
			}
			if rev.FilesOmitted != tc.omitted {
				t.Errorf("FilesOmitted = %v, want %v", rev.FilesOmitted, tc.omitted)
			}
			r, err := cs.AppsV1().ControllerRevisions(ns).Get(t.Context(), rev.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Labels[LabelKind] != "memcacheds.cache.example.com" || r.Labels[labelManagedBy] != "tmplop-operator" ||
				r.Annotations[AnnotationFingerprint] != fp || r.Revision != 1 {
				t.Errorf("record %v %v revision %d", r.Labels, r.Annotations, r.Revision)
			}
			if got := strings.Contains(string(r.Data.Raw), gzipEncoding); got != tc.gzipped {
				t.Errorf("gzipped = %v, want %v", got, tc.gzipped)
			}
			files, err := Files(r)
			if tc.omitted {
				if err == nil {
					t.Errorf("Files of a record without files: no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if files.Fingerprint() != fp {
				t.Errorf("the record's files are not the folder's")
			}
		})
	}
}

// TestEnsureRaces: replicas recording the same or different folders of a
// kind at once end with one record per folder and no number twice; a
// replica whose first write lost a race tries again.
func TestEnsureRaces(t *testing.T) {
	t.Run("concurrent replicas", func(t *testing.T) {
		s, _ := fakeStore(t, existing(t, "v0", 1))
		s.pause = nil // the jittered pause: without it, eight writers in step may race every attempt
		versions := []string{"v1", "v2", "v3", "v4"}
		var wg sync.WaitGroup
		errs := make(chan error, 2*len(versions))
		for range 2 {
			for _, v := range versions {
				wg.Go(func() {
					fp, files := folder(v)
					if _, err := s.Ensure(context.Background(), memcacheds, fp, files); err != nil {
						errs <- err
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		got := numbers(t, s, append(versions, "v0")...)
		if len(got) != 5 {
			t.Errorf("records %v, want one per folder", got)
		}
		seen := map[int64]string{}
		for v, n := range got {
			if seen[n] != "" {
				t.Errorf("number %d is both %s's and %s's", n, v, seen[n])
			}
			seen[n] = v
		}
	})
	t.Run("another replica takes the number and the name", func(t *testing.T) {
		s, cs := fakeStore(t, existing(t, "v1", 1))
		// Between our list and our create, another replica records v3 as 2,
		// and v2 (ours) too: our create meets AlreadyExists, and the
		// number 2 is taken twice.
		raced := false
		cs.PrependReactor("create", "controllerrevisions", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if raced {
				return false, nil, nil
			}
			raced = true
			for _, v := range []string{"v3", "v2"} {
				r := existing(t, v, 2)
				if v == "v3" {
					r.CreationTimestamp = metav1.NewTime(r.CreationTimestamp.Add(-time.Second))
				}
				if err := cs.Tracker().Add(r); err != nil {
					t.Fatal(err)
				}
			}
			r := a.(k8stesting.CreateAction).GetObject().(*appsv1.ControllerRevision)
			return true, nil, apierrors.NewAlreadyExists(appsv1.Resource("controllerrevisions"), r.Name)
		})
		fp, files := folder("v2")
		rev, err := s.Ensure(t.Context(), memcacheds, fp, files)
		if err != nil {
			t.Fatal(err)
		}
		if rev.Number != 3 {
			t.Errorf("Ensure = %d, want 3 (past the other replica's 2)", rev.Number)
		}
		if got := numbers(t, s, "v1", "v2", "v3"); fmt.Sprint(got) != fmt.Sprint(map[string]int64{"v1": 1, "v2": 3, "v3": 2}) {
			t.Errorf("records %v", got)
		}
	})
	t.Run("always raced: an error, to try again", func(t *testing.T) {
		s, cs := fakeStore(t, existing(t, "v1", 1))
		cs.PrependReactor("update", "controllerrevisions", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewConflict(appsv1.Resource("controllerrevisions"), "x", fmt.Errorf("changed"))
		})
		newer := existing(t, "v2", 1)
		newer.CreationTimestamp = metav1.NewTime(newer.CreationTimestamp.Add(time.Second))
		if err := cs.Tracker().Add(newer); err != nil {
			t.Fatal(err)
		}
		fp, files := folder("v2")
		if _, err := s.Ensure(t.Context(), memcacheds, fp, files); err == nil || !strings.Contains(err.Error(), "raced") {
			t.Errorf("Ensure = %v, want a race error", err)
		}
	})
	t.Run("a list that fails", func(t *testing.T) {
		s, cs := fakeStore(t)
		cs.PrependReactor("list", "controllerrevisions", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(appsv1.Resource("controllerrevisions"), "", fmt.Errorf("no"))
		})
		fp, files := folder("v1")
		_, err := s.Ensure(t.Context(), memcacheds, fp, files)
		var forbidden kube.Forbidden
		if err == nil || !strings.Contains(err.Error(), "list the revisions of memcacheds.cache.example.com") || !errors.As(err, &forbidden) {
			t.Errorf("Ensure = %v, want a marked Forbidden with context", err)
		}
	})
}

// TestPrune: the newest keep+1 and those in use stay; a record gone or
// renumbered since the list is left alone.
func TestPrune(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keep    int
		inUse   []string
		gone    string // deleted by someone else between list and delete
		deleted []string
		left    []string
	}{
		{name: "keep 2 old ones", keep: 2, inUse: []string{"v5"}, deleted: []string{"v2", "v1"}, left: []string{"v3", "v4", "v5"}},
		{name: "an old one in use stays", keep: 2, inUse: []string{"v5", "v1"}, deleted: []string{"v2"}, left: []string{"v1", "v3", "v4", "v5"}},
		{name: "keep none: the newest stays", keep: 0, inUse: []string{"v5"}, deleted: []string{"v4", "v3", "v2", "v1"}, left: []string{"v5"}},
		{name: "the current stays even when not the newest", keep: 0, inUse: []string{"v3"}, deleted: []string{"v4", "v2", "v1"}, left: []string{"v3", "v5"}},
		{name: "under the limit: nothing", keep: 10, inUse: []string{"v5"}, left: []string{"v1", "v2", "v3", "v4", "v5"}},
		{name: "one gone meanwhile", keep: 2, inUse: []string{"v5"}, gone: "v1", deleted: []string{"v2"}, left: []string{"v3", "v4", "v5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			names := map[string]string{}
			for i, v := range []string{"v1", "v2", "v3", "v4", "v5"} {
				r := existing(t, v, int64(i+1))
				names[r.Name] = v
				objs = append(objs, r)
			}
			s, cs := fakeStore(t, objs...)
			if tc.gone != "" {
				cs.PrependReactor("delete", "controllerrevisions", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if name := a.(k8stesting.DeleteAction).GetName(); names[name] == tc.gone {
						if err := cs.Tracker().Delete(appsv1.SchemeGroupVersion.WithResource("controllerrevisions"), ns, name); err != nil {
							t.Fatal(err)
						}
						return true, nil, apierrors.NewNotFound(appsv1.Resource("controllerrevisions"), "x")
					}
					return false, nil, nil
				})
			}
			deleted, err := s.Prune(t.Context(), memcacheds, tc.keep, func(name string) bool {
				for _, v := range tc.inUse {
					if names[name] == v {
						return true
					}
				}
				return false
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range deleted {
				got = append(got, names[n])
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.deleted) {
				t.Errorf("deleted %v, want %v", got, tc.deleted)
			}
			var left []string
			for v := range numbers(t, s, "v1", "v2", "v3", "v4", "v5") {
				left = append(left, v)
			}
			if fmt.Sprint(sorted(left)) != fmt.Sprint(tc.left) {
				t.Errorf("left %v, want %v", sorted(left), tc.left)
			}
		})
	}
}

// TestNames: names and label values of kinds of any group fit Kubernetes'
// limits.
func TestNames(t *testing.T) {
	fp, _ := folder("v1")
	long := strings.Repeat("abcdefghij.", 30)[:240]
	for _, tc := range []struct {
		gr        schema.GroupResource
		name      string
		labelHead string
	}{
		{gr: memcacheds, name: "memcacheds.cache.example.com-" + nameHash(testManager, fp), labelHead: "memcacheds.cache.example.com"},
		{gr: schema.GroupResource{Resource: "configmaps"}, name: "configmaps-" + nameHash(testManager, fp), labelHead: "configmaps"},
		{gr: schema.GroupResource{Group: long, Resource: "things"}, labelHead: "things.abcdefghij"},
	} {
		name, err := Name(tc.gr, testManager, fp)
		if err != nil {
			t.Errorf("Name(%s): %v", tc.gr, err)
			continue
		}
		if tc.name != "" && name != tc.name {
			t.Errorf("Name(%s) = %s, want %s", tc.gr, name, tc.name)
		}
		if len(name) > 253 {
			t.Errorf("Name(%s) is %d long", tc.gr, len(name))
		}
		l := LabelValue(tc.gr)
		if len(l) > 63 || !strings.HasPrefix(l, tc.labelHead) {
			t.Errorf("LabelValue(%s) = %q", tc.gr, l)
		}
	}
	if LabelValue(schema.GroupResource{Group: long, Resource: "things"}) == LabelValue(schema.GroupResource{Group: long + "x", Resource: "things"}) {
		t.Errorf("two long kinds share a label value")
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// testManager is the field manager of the tests' Store.
const testManager = "tmplop-operator"

// nameHash is the hash a record's name ends with.
func nameHash(manager, fp string) string {
	sum := sha256.Sum256([]byte(manager + "\x00" + fp))
	return hex.EncodeToString(sum[:])[:16]
}

// TestNamePerManager: two operator instances (two field managers) serving
// one folder in one state namespace name their records apart; the same
// instance names the same folder alike.
func TestNamePerManager(t *testing.T) {
	fp, _ := folder("v1")
	a, errA := Name(memcacheds, "one", fp)
	b, errB := Name(memcacheds, "two", fp)
	again, _ := Name(memcacheds, "one", fp)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if a == b || a != again {
		t.Errorf("names %s (one), %s (two), %s (one again): want two names, stable", a, b, again)
	}
}
