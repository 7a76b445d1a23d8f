package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// fakeResource holds objects' metadata in memory, lists and watches them
// by label selector as the API server does (an object that stops matching
// a watch's selector is deleted from it), and applies AssignPatch's
// patches with their resourceVersion precondition.
type fakeResource struct {
	mu       sync.Mutex
	rv       int
	objs     map[cache.ObjectName]*metav1.PartialObjectMetadata
	watchers []fakeWatcher
	// patches are the writes that succeeded: "ns/name=shard".
	patches []string
	// fail, when set, answers a patch instead of applying it.
	fail func(name cache.ObjectName) error
}

type fakeWatcher struct {
	sel labels.Selector
	w   *watch.RaceFreeFakeWatcher
}

var _ Resource = (*fakeResource)(nil)

// IsWatchListSemanticsUnSupported tells the informer to list, then watch.
func (f *fakeResource) IsWatchListSemanticsUnSupported() bool { return true }

// add creates namespace/name labelled with shard ("" for none).
func (f *fakeResource) add(namespace, name, shard string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.objs == nil {
		f.objs = map[cache.ObjectName]*metav1.PartialObjectMetadata{}
	}
	f.rv++
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: strconv.Itoa(f.rv)}}
	if shard != "" {
		o.Labels = map[string]string{ShardLabel: shard}
	}
	f.objs[cache.MetaObjectToName(o)] = o
	f.notify(nil, o)
}

// addChild creates namespace/name as a child held by shard heldBy, of the
// parent named in its annotation (testChildren.Parent reads it).
func (f *fakeResource) addChild(namespace, name, heldBy, parent string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.objs == nil {
		f.objs = map[cache.ObjectName]*metav1.PartialObjectMetadata{}
	}
	f.rv++
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: strconv.Itoa(f.rv),
		Labels: map[string]string{HeldByLabel: heldBy}, Annotations: map[string]string{testParentAnnotation: parent}}}
	f.objs[cache.MetaObjectToName(o)] = o
	f.notify(nil, o)
}

// notify tells the watchers of an object's change from old to cur (nil:
// absent).
func (f *fakeResource) notify(old, cur *metav1.PartialObjectMetadata) {
	for _, w := range f.watchers {
		was := old != nil && w.sel.Matches(labels.Set(old.Labels))
		is := cur != nil && w.sel.Matches(labels.Set(cur.Labels))
		switch {
		case !was && is:
			w.w.Add(cur.DeepCopy())
		case was && is:
			w.w.Modify(cur.DeepCopy())
		case was && !is:
			w.w.Delete(cur.DeepCopy())
		}
	}
}

func (f *fakeResource) List(_ context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(f.rv)}}
	for _, o := range f.objs {
		if sel.Matches(labels.Set(o.Labels)) {
			l.Items = append(l.Items, *o.DeepCopy())
		}
	}
	return l, nil
}

func (f *fakeResource) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	w := watch.NewRaceFreeFake()
	f.watchers = append(f.watchers, fakeWatcher{sel, w})
	return w, nil
}

func (f *fakeResource) Patch(_ context.Context, namespace, name string, patch []byte) error {
	var p struct {
		Metadata struct {
			ResourceVersion string            `json:"resourceVersion"`
			Labels          map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	key := cache.ObjectName{Namespace: namespace, Name: name}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(key); err != nil {
			return err
		}
	}
	gr := schema.GroupResource{Resource: "things"}
	old, ok := f.objs[key]
	if !ok {
		return apierrors.NewNotFound(gr, name)
	}
	if p.Metadata.ResourceVersion != "" && p.Metadata.ResourceVersion != old.ResourceVersion {
		return apierrors.NewConflict(gr, name, errors.New("the object has been modified"))
	}
	cur := old.DeepCopy()
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	for k, v := range p.Metadata.Labels {
		cur.Labels[k] = v
	}
	f.rv++
	cur.ResourceVersion = strconv.Itoa(f.rv)
	f.objs[key] = cur
	if held, ok := p.Metadata.Labels[HeldByLabel]; ok {
		f.patches = append(f.patches, key.String()+"=held-by:"+held)
	} else {
		f.patches = append(f.patches, key.String()+"="+p.Metadata.Labels[ShardLabel])
	}
	f.notify(old, cur)
	return nil
}

// shards are the objects' labels, by name.
func (f *fakeResource) shards() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[string]string{}
	for k, o := range f.objs {
		m[k.String()] = o.Labels[ShardLabel]
	}
	return m
}

func (f *fakeResource) sent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := slices.Clone(f.patches)
	slices.Sort(s)
	return s
}

// ringMembers are Members on a fake clock at its start: shards a and b
// live, c released (dead at once), and x with no Lease at all (not dead
// before a lease duration has passed: it may have been deleted while
// live).
func ringMembers(t *testing.T) *Members {
	t.Helper()
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	m, cs, clk := startMembers(t, testLease("a", "a", t0), testLease("b", "b", t0), testLease("c", "", t0))
	clk.Step(time.Millisecond)
	renewNow(t, m, cs, clk, "a", "b") // seen renewing: live
	waitRing(t, m, "a", "b")
	return m
}

// owner is where the ring of a and b puts ns/name.
func owner(ns, name string) string {
	return NewRing([]string{"a", "b"}).Owner(Key("example.com", "Thing", ns, name))
}

func TestSharderReassign(t *testing.T) {
	conflict := func(cache.ObjectName) error {
		return apierrors.NewConflict(schema.GroupResource{Resource: "things"}, "o1", errors.New("modified"))
	}
	cases := []struct {
		name    string
		objs    map[string]string // name -> shard
		fail    func(cache.ObjectName) error
		noShard bool // an empty ring
		// want: the patches sent (name -> owner is the ring's), the
		// counters and whether a pass must come again.
		want      []string
		stats     Stats
		wantAgain bool
	}{
		{name: "objects of live shards are not touched", objs: map[string]string{"o1": "a", "o2": "b", "o3": ""}},
		{name: "objects of a dead shard go to their owners",
			objs:  map[string]string{"o1": "c", "o2": "c", "o3": "c", "o4": "a"},
			want:  []string{"o1", "o2", "o3"},
			stats: Stats{Reassigned: 3}},
		{name: "a shard not confirmed dead keeps its objects, and the pass comes again",
			objs: map[string]string{"o1": "x", "o2": "c"}, want: []string{"o2"},
			stats: Stats{Reassigned: 1}, wantAgain: true},
		{name: "a conflict is counted and the pass comes again",
			objs: map[string]string{"o1": "c"}, fail: conflict,
			stats: Stats{Conflicts: 1}, wantAgain: true},
		{name: "no live shard: nothing to move to",
			objs: map[string]string{"o1": "c"}, noShard: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := &fakeResource{}
			for name, shard := range tc.objs {
				res.add("ns", name, shard)
			}
			res.fail = tc.fail
			s := NewSharder(res, ringMembers(t), "example.com", "Thing")
			ring, _ := s.members.Ring()
			if tc.noShard {
				ring = NewRing(nil)
			}
			again := s.reassign(t.Context(), ring)

			var want []string
			for _, name := range tc.want {
				want = append(want, "ns/"+name+"="+owner("ns", name))
			}
			slices.Sort(want)
			if got := res.sent(); !slices.Equal(got, want) {
				t.Errorf("patches %v; want %v", got, want)
			}
			if got := s.Stats(); got != tc.stats {
				t.Errorf("stats %+v; want %+v", got, tc.stats)
			}
			if again != tc.wantAgain {
				t.Errorf("again = %v; want %v", again, tc.wantAgain)
			}
		})
	}
}

func TestSharderAssignNew(t *testing.T) {
	status := func(err error) func(cache.ObjectName) error {
		return func(cache.ObjectName) error { return err }
	}
	gr := schema.GroupResource{Resource: "things"}
	cases := []struct {
		name    string
		cached  bool // in the informer's cache of unassigned objects
		fail    func(cache.ObjectName) error
		noShard bool
		twice   bool // queued again before the watch took it out of the cache
		sent    bool
		stats   Stats
		wantErr bool // requeued, rate-limited
	}{
		{name: "unassigned: labelled with its owner", cached: true, sent: true, stats: Stats{Assigned: 1}},
		{name: "assigned or deleted since it was queued: nothing", cached: false},
		{name: "queued again before the watch saw the label: one write", cached: true, twice: true, sent: true, stats: Stats{Assigned: 1}},
		{name: "conflict: counted, the newer version comes through the watch", cached: true,
			fail: status(apierrors.NewConflict(gr, "o1", errors.New("modified"))), stats: Stats{Conflicts: 1}},
		{name: "not found: deleted meanwhile", cached: true, fail: status(apierrors.NewNotFound(gr, "o1"))},
		{name: "other error: retried", cached: true, fail: status(apierrors.NewServiceUnavailable("down")), wantErr: true},
		{name: "no live shard: waits for the next ring", cached: true, noShard: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := &fakeResource{}
			res.add("ns", "o1", "")
			res.fail = tc.fail
			var m *Members
			if tc.noShard {
				m, _, _ = startMembers(t)
			} else {
				m = ringMembers(t)
			}
			s := NewSharder(res, m, "example.com", "Thing")
			s.store = cache.NewStore(cache.MetaNamespaceKeyFunc)
			if tc.cached {
				l, _ := res.List(t.Context(), metav1.ListOptions{})
				if err := s.store.Add(&l.Items[0]); err != nil {
					t.Fatal(err)
				}
			}
			err := s.assignNew(t.Context(), cache.ObjectName{Namespace: "ns", Name: "o1"})
			if tc.twice && err == nil {
				err = s.assignNew(t.Context(), cache.ObjectName{Namespace: "ns", Name: "o1"})
			}
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v; want one: %v", err, tc.wantErr)
			}
			var want []string
			if tc.sent {
				want = []string{"ns/o1=" + owner("ns", "o1")}
			}
			if got := res.sent(); !slices.Equal(got, want) {
				t.Errorf("patches %v; want %v", got, want)
			}
			if got := s.Stats(); got != tc.stats {
				t.Errorf("stats %+v; want %+v", got, tc.stats)
			}
		})
	}
}

// TestSharderRun: the loop as a whole, on a fake: every unassigned object
// and every object of a dead shard labelled once with its owner, the
// objects of live shards never written.
func TestSharderRun(t *testing.T) {
	res := &fakeResource{}
	var want []string
	for i := range 50 {
		name := fmt.Sprintf("new-%d", i)
		res.add("ns", name, "")
		want = append(want, "ns/"+name+"="+owner("ns", name))
	}
	for i := range 5 {
		name := fmt.Sprintf("dead-%d", i)
		res.add("ns", name, "c")
		want = append(want, "ns/"+name+"="+owner("ns", name))
		res.add("ns", fmt.Sprintf("live-%d", i), "a")
	}
	slices.Sort(want)
	s := NewSharder(res, ringMembers(t), "example.com", "Thing")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()

	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return len(res.sent()) >= len(want), nil
	})
	if err != nil {
		t.Fatalf("%d patches after 5 s; want %d", len(res.sent()), len(want))
	}
	// A created object is assigned through the watch.
	res.add("ns", "later", "")
	want = append(want, "ns/later="+owner("ns", "later"))
	slices.Sort(want)
	err = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return res.shards()["ns/later"] != "", nil
	})
	if err != nil {
		t.Fatal("an object created while the sharder runs was not assigned")
	}
	time.Sleep(100 * time.Millisecond) // room for a second, wrong write
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := res.sent(); !slices.Equal(got, want) {
		t.Errorf("patches %v;\nwant %v", got, want)
	}
	for name, shard := range res.shards() {
		if shard != "a" && shard != "b" {
			t.Errorf("%s on shard %q after the run", name, shard)
		}
	}
	if got, want := s.Stats(), (Stats{Assigned: 51, Reassigned: 5}); got != want {
		t.Errorf("stats %+v; want %+v", got, want)
	}
}

// TestSharderLateHandOver: an object handed to a dead shard after the
// sharder's pass for that shard (by a replica whose view of the ring still
// showed it) is moved all the same, without a change of the ring to
// prompt a pass: soon while the ring settles after a shard left, and at
// the next resync otherwise.
func TestSharderLateHandOver(t *testing.T) {
	cases := []struct {
		name string
		// left: shard d is live at the start and leaves; the late object
		// is handed to it. Otherwise to c, released before the start.
		left   bool
		resync time.Duration
	}{
		{name: "while the ring settles after a shard left", left: true, resync: time.Hour},
		{name: "at the next resync", resync: 300 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
			m, cs, clk := startMembers(t, testLease("a", "a", t0), testLease("b", "b", t0), testLease("c", "", t0), testLease("d", "d", t0))
			clk.Step(time.Millisecond)
			live := []string{"a", "b"}
			if tc.left {
				live = append(live, "d")
			}
			renewNow(t, m, cs, clk, live...)
			waitRing(t, m, live...)

			res := &fakeResource{}
			s := NewSharder(res, m, "example.com", "Thing")
			s.resync = tc.resync
			if !tc.left {
				s.settle = 0 // the start's settling would find it first
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error)
			go func() { done <- s.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			dead := "c"
			if tc.left {
				dead = "d"
				// d releases its Lease, as a shard that stops does.
				if _, err := cs.CoordinationV1().Leases("ops").Update(t.Context(), testLease("d", "", clk.Now()), metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				waitRing(t, m, "a", "b")
			}
			time.Sleep(200 * time.Millisecond) // the pass of the change has run
			res.add("ns", "late", dead)
			err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 3*time.Second, true, func(context.Context) (bool, error) {
				return res.shards()["ns/late"] == owner("ns", "late"), nil
			})
			if err != nil {
				t.Fatalf("an object handed to dead shard %s after its pass is on %q after 3 s; want %s", dead, res.shards()["ns/late"], owner("ns", "late"))
			}
		})
	}
}

func TestHandOverTo(t *testing.T) {
	cases := []struct {
		name         string
		staleVersion bool
		wantConflict bool
	}{
		{name: "on the version read: one write"},
		{name: "on a stale version: a Conflict, nothing written", staleVersion: true, wantConflict: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := &fakeResource{}
			res.add("ns", "o1", "a")
			l, _ := res.List(t.Context(), metav1.ListOptions{})
			obj := &l.Items[0]
			if tc.staleVersion {
				res.add("ns", "o1", "a") // written again since
			}
			err := HandOverTo(t.Context(), res, obj, "b")
			if got := apierrors.IsConflict(err); got != tc.wantConflict || !tc.wantConflict && err != nil {
				t.Fatalf("error %v; want a Conflict: %v", err, tc.wantConflict)
			}
			want := map[string]string{"ns/o1": "b"}
			if tc.wantConflict {
				want["ns/o1"] = "a"
			}
			if got := res.shards(); got["ns/o1"] != want["ns/o1"] {
				t.Errorf("label %q; want %q", got["ns/o1"], want["ns/o1"])
			}
		})
	}
}

// testParentAnnotation names a test child's parent: "ns/name", or
// "other/…" for a child of another kind.
const testParentAnnotation = "test/parent"

// testChildren are the children of the kind in two resources.
type testChildren struct {
	res []Resource
	err error
}

func (c testChildren) Resources(context.Context) ([]Resource, error) { return c.res, c.err }

func (c testChildren) Parent(o *metav1.PartialObjectMetadata) (string, string, bool) {
	ns, name, ok := strings.Cut(o.Annotations[testParentAnnotation], "/")
	if !ok || ns == "other" {
		return "", "", false
	}
	return ns, name, true
}

func TestSharderReassignChildren(t *testing.T) {
	conflict := func(cache.ObjectName) error {
		return apierrors.NewConflict(schema.GroupResource{Resource: "things"}, "c1", errors.New("modified"))
	}
	cases := []struct {
		name string
		// children: name -> held by, parent "ns/name"
		children  map[string][2]string
		listErr   error
		fail      func(cache.ObjectName) error
		want      []string // children moved, each to its parent's owner
		wantAgain bool
	}{
		{name: "children of live shards are not touched",
			children: map[string][2]string{"c1": {"a", "ns/p1"}, "c2": {"b", "ns/p2"}}},
		{name: "children of a dead shard go where their parents go",
			children: map[string][2]string{"c1": {"c", "ns/p1"}, "c2": {"c", "ns/p2"}, "c3": {"a", "ns/p3"}},
			want:     []string{"c1=ns/p1", "c2=ns/p2"}},
		{name: "another kind's children are its sharder's",
			children: map[string][2]string{"c1": {"c", "other/p1"}}},
		{name: "a shard not confirmed dead keeps its children, and the pass comes again",
			children: map[string][2]string{"c1": {"x", "ns/p1"}, "c2": {"c", "ns/p2"}},
			want:     []string{"c2=ns/p2"}, wantAgain: true},
		{name: "a conflict: the pass comes again",
			children: map[string][2]string{"c1": {"c", "ns/p1"}}, fail: conflict, wantAgain: true},
		{name: "the resources cannot be listed: the pass comes again",
			listErr: errors.New("inventory unreadable"), wantAgain: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := &fakeResource{}
			for name, c := range tc.children {
				res.addChild("ns", name, c[0], c[1])
			}
			res.fail = tc.fail
			s := NewSharder(&fakeResource{}, ringMembers(t), "example.com", "Thing").
				WithChildren(testChildren{res: []Resource{res}, err: tc.listErr})
			ring, _ := s.members.Ring()
			if again := s.reassignChildren(t.Context(), ring); again != tc.wantAgain {
				t.Errorf("again = %v; want %v", again, tc.wantAgain)
			}
			var want []string
			for _, w := range tc.want {
				child, parent, _ := strings.Cut(w, "=")
				ns, name, _ := strings.Cut(parent, "/")
				want = append(want, "ns/"+child+"=held-by:"+owner(ns, name))
			}
			slices.Sort(want)
			if got := res.sent(); !slices.Equal(got, want) {
				t.Errorf("patches %v; want %v", got, want)
			}
			if got := s.Stats().ChildrenMoved; got != uint64(len(want)) {
				t.Errorf("ChildrenMoved = %d; want %d", got, len(want))
			}
		})
	}
}
