package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/tmplop/operator/engine/kube"
	"github.com/tmplop/operator/engine/revision"
	"github.com/tmplop/operator/engine/rollout"
)

var (
	memcachedGVK = schema.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached"}
	memcachedGR  = schema.GroupResource{Group: "cache.example.com", Resource: "memcacheds"}
	rolloutT0    = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	recA         = rollout.Ref{Record: "memcacheds.cache.example.com-aaaa", Number: 1}
	recB         = rollout.Ref{Record: "memcacheds.cache.example.com-bbbb", Number: 2}
)

// fakeRecords are the kind's revision records in namespace ops, as the
// API server keeps their metadata: a resourceVersion bumped at each write,
// a merge patch whose resourceVersion is not the record's refused with a
// Conflict.
type fakeRecords struct {
	t       *testing.T
	items   []*metav1.PartialObjectMetadata
	rv      int
	patches []string
	// between runs before the next patch, once: another writer's (the
	// controller's) write that lands between our read and our write.
	between func(r *fakeRecords)
	// conflicts answer the next patches with a Conflict whatever they say.
	conflicts int
}

func (r *fakeRecords) add(name string, st *rollout.State) {
	r.rv++
	md := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ops", ResourceVersion: strconv.Itoa(r.rv),
		Labels: map[string]string{revision.LabelKind: revision.LabelValue(memcachedGR), "app.kubernetes.io/managed-by": "operator"}}}
	if st != nil {
		md.Annotations = map[string]string{rollout.AnnotationState: st.Encode()}
	}
	r.items = append(r.items, md)
}

func (r *fakeRecords) get(name string) *metav1.PartialObjectMetadata {
	for _, m := range r.items {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// state is the State on record name, nil without one.
func (r *fakeRecords) state(name string) *rollout.State {
	r.t.Helper()
	s, err := rollout.Decode(r.get(name).Annotations)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// set writes st on record name as another writer would.
func (r *fakeRecords) set(name string, st *rollout.State) {
	m := r.get(name)
	r.rv++
	m.ResourceVersion = strconv.Itoa(r.rv)
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[rollout.AnnotationState] = st.Encode()
}

func (r *fakeRecords) list(a clienttesting.Action) (bool, runtime.Object, error) {
	la := a.(clienttesting.ListAction)
	if a.GetNamespace() != "ops" {
		return true, nil, fmt.Errorf("listed in %q, want ops", a.GetNamespace())
	}
	// The metadata fake wants a *metav1.List of *PartialObjectMetadata
	// (and filters by labels itself: the selector is checked here too).
	out := &metav1.List{}
	for _, m := range r.items {
		if la.GetListRestrictions().Labels.Matches(labels.Set(m.Labels)) {
			out.Items = append(out.Items, runtime.RawExtension{Object: m.DeepCopy()})
		}
	}
	return true, out, nil
}

func (r *fakeRecords) patch(a clienttesting.Action) (bool, runtime.Object, error) {
	pa := a.(clienttesting.PatchAction)
	if b := r.between; b != nil {
		r.between = nil
		b(r)
	}
	r.patches = append(r.patches, pa.GetName()+" "+string(pa.GetPatch()))
	m := r.get(pa.GetName())
	if m == nil || a.GetNamespace() != "ops" {
		return true, nil, apierrors.NewNotFound(rollout.Records.GroupResource(), pa.GetName())
	}
	var p struct {
		Metadata struct {
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
			Labels          map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(pa.GetPatch(), &p); err != nil {
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	if r.conflicts > 0 || (p.Metadata.ResourceVersion != "" && p.Metadata.ResourceVersion != m.ResourceVersion) {
		r.conflicts = max(r.conflicts-1, 0)
		return true, nil, apierrors.NewConflict(rollout.Records.GroupResource(), m.Name, fmt.Errorf("the object has been modified"))
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	for k, v := range p.Metadata.Annotations {
		m.Annotations[k] = v
	}
	for k, v := range p.Metadata.Labels {
		m.Labels[k] = v
	}
	r.rv++
	m.ResourceVersion = strconv.Itoa(r.rv)
	return true, m.DeepCopy(), nil
}

// memcached is an object of the kind reconciled with revision rev (0:
// not yet), Ready or not.
func memcached(ns, name string, rev int64, ready bool) runtime.Object {
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": memcachedGVK.GroupVersion().String(), "kind": "Memcached",
		"metadata": map[string]any{"name": name, "namespace": ns},
	}}
	if rev > 0 {
		status := "False"
		if ready {
			status = "True"
		}
		o.Object["status"] = map[string]any{"observedRevision": rev, "observedGeneration": int64(1),
			"conditions": []any{map[string]any{"type": "Reconciled", "status": "True"}, map[string]any{"type": "Ready", "status": status}}}
	}
	return o
}

// rolloutFakes is a target over fakes: the kind served (or not), its
// objects, its records.
func rolloutFakes(t *testing.T, served bool, objs ...runtime.Object) (*rolloutTarget, *fakeRecords) {
	mapper := meta.NewDefaultRESTMapper(nil)
	if served {
		mapper.Add(memcachedGVK, meta.RESTScopeNamespace)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{memcachedGVK.GroupVersion().WithResource("memcacheds"): "MemcachedList"}, objs...)
	recs := &fakeRecords{t: t}
	md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	md.PrependReactor("list", "controllerrevisions", recs.list)
	md.PrependReactor("patch", "controllerrevisions", recs.patch)
	c := kube.NewForClients(kube.Clients{Dynamic: dyn, Mapper: mapper, Metadata: md}, "operator")
	return newRolloutTarget(c, memcachedGR, "ops", "operator"), recs
}

// progressing is a rollout from A to B at step 2 of 3.
func progressing(phase rollout.Phase) *rollout.State {
	return &rollout.State{Seq: 2, Folder: 2, From: recA, To: recB, Step: 1, Steps: 3, Cutoff: "1abc", Moved: 3, StepStarted: rolloutT0,
		Phase: phase, Reason: "StepStarted", Message: "step 2/3: 3 objects move to revision 2"}
}

// TestRolloutStatus: the state of the record of the highest Seq, the
// objects counted by revision and Ready across namespaces, and the
// kubectl wait line; text and JSON.
func TestRolloutStatus(t *testing.T) {
	target, recs := rolloutFakes(t, true,
		memcached("a", "one", 2, true), memcached("a", "two", 2, false), memcached("b", "three", 2, true),
		memcached("b", "four", 1, true), memcached("c", "five", 1, true), memcached("c", "new", 0, false))
	recs.add(recA.Record, &rollout.State{Seq: 1, To: recA, Steps: 1, Cutoff: rollout.Last, Phase: rollout.Complete, Reason: "NothingToStage"})
	recs.add(recB.Record, progressing(rollout.Progressing))
	// Another operator instance's record (another field manager), and one
	// of another kind, of higher Seqs: not this kind's rollout.
	recs.add("memcacheds.cache.example.com-other", &rollout.State{Seq: 9, To: recA, Phase: rollout.Paused})
	recs.items[2].Labels["app.kubernetes.io/managed-by"] = "other"
	recs.add("widgets.example.com-cccc", &rollout.State{Seq: 9, To: recA, Phase: rollout.Paused})
	recs.items[3].Labels[revision.LabelKind] = "widgets.example.com"
	wait := `kubectl wait -n ops controllerrevision/memcacheds.cache.example.com-bbbb --for=jsonpath='{.metadata.labels.operator\.tmplop\.io/rollout-phase}'=Complete`

	var out, errOut bytes.Buffer
	if err := rolloutStatus(t.Context(), &out, &errOut, target, "text", rolloutT0.Add(90*time.Second)); err != nil {
		t.Fatal(err)
	}
	want := `Kind:     memcacheds.cache.example.com
Record:   ops/memcacheds.cache.example.com-bbbb
From:     revision 1 (memcacheds.cache.example.com-aaaa)
To:       revision 2 (memcacheds.cache.example.com-bbbb)
Phase:    Progressing
Step:     2/3
Reason:   StepStarted: step 2/3: 3 objects move to revision 2
Since:    2025-01-02T03:04:05Z (1m30s ago)
Objects:  6, 4 Ready
  revision 2 (to):       3, 2 Ready
  revision 1 (from):     2, 2 Ready
  no revision yet:       1, 0 Ready
Wait for it:
  ` + wait + "\n"
	if out.String() != want {
		t.Errorf("status:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	if err := rolloutStatus(t.Context(), &out, &errOut, target, "json", rolloutT0); err != nil {
		t.Fatal(err)
	}
	var r rolloutReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if r.Resource != "memcacheds.cache.example.com" || r.Namespace != "ops" || r.Record != recB.Record || r.Wait != wait ||
		r.State == nil || *r.State != *progressing(rollout.Progressing) || r.Objects == nil || r.Objects.Total != 6 || r.Objects.Ready != 4 ||
		len(r.Objects.ByRevision) != 3 || r.Objects.ByRevision[0] != (revisionCount{Revision: 2, Objects: 3, Ready: 2}) {
		t.Errorf("json report %+v\n%s", r, out.String())
	}
	if errOut.Len() > 0 {
		t.Errorf("stderr: %s", errOut.String())
	}
}

// TestRolloutStatusErrors: a kind without records, or without a state on
// them, or whose records do not decode, exits 1 saying why; one whose
// objects cannot be listed shows the state and exits 1.
func TestRolloutStatusErrors(t *testing.T) {
	tests := map[string]struct {
		served  bool
		records func(r *fakeRecords)
		want    string
		printed string
	}{
		"no records": {served: true, want: "no revision record in namespace ops kept by field manager operator (--state-namespace, --field-manager): the kind has no staged rollout: kind.yaml rollout is all, or the operator has not served it"},
		"no state": {served: true, records: func(r *fakeRecords) { r.add(recA.Record, nil); r.add(recB.Record, nil) },
			want: "none of its 2 revision records in ops holds a rollout state: the kind has no staged rollout"},
		"garbage": {served: true, records: func(r *fakeRecords) {
			r.add(recA.Record, nil)
			r.get(recA.Record).Annotations = map[string]string{rollout.AnnotationState: "{"}
		}, want: "revision record memcacheds.cache.example.com-aaaa: decode the rollout annotation"},
		"kind not served": {records: func(r *fakeRecords) { r.add(recB.Record, progressing(rollout.Halted)) },
			want: "count the objects of memcacheds.cache.example.com: map the resource memcacheds.cache.example.com", printed: "Phase:    Halted"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			target, recs := rolloutFakes(t, tc.served)
			if tc.records != nil {
				tc.records(recs)
			}
			var out bytes.Buffer
			err := rolloutStatus(t.Context(), &out, &out, target, "text", rolloutT0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.printed != "" && !strings.Contains(out.String(), tc.printed) {
				t.Errorf("output lacks %q:\n%s", tc.printed, out.String())
			}
			if len(recs.patches) > 0 {
				t.Errorf("status wrote %v", recs.patches)
			}
		})
	}
}

// TestRolloutChange: pause, resume and undo compute the next state from
// the current one, write it on the record of its To under the
// resourceVersion read, say so in one line, and compute it again after a
// Conflict; what rollout refuses is an error and writes nothing.
func TestRolloutChange(t *testing.T) {
	now := rolloutT0.Add(time.Hour)
	complete := func() *rollout.State {
		s := progressing(rollout.Complete)
		s.Step, s.Cutoff = 2, rollout.Last
		return s
	}
	tests := map[string]struct {
		action string
		state  *rollout.State
		// setup changes the records after they are made.
		setup func(r *fakeRecords)
		// on is the record written, and check its state; "" none.
		on      string
		check   func(t *testing.T, s *rollout.State)
		line    string
		err     string
		patches int
	}{
		"pause": {action: "pause", state: progressing(rollout.Progressing), on: recB.Record, patches: 1,
			check: func(t *testing.T, s *rollout.State) {
				if s.Phase != rollout.Paused || s.Seq != 2 || s.Step != 1 || s.Cutoff != "1abc" || !s.StepStarted.Equal(rolloutT0) {
					t.Errorf("state %+v", s)
				}
			},
			line: "memcacheds.cache.example.com: rollout from revision 1 to 2 paused at step 2/3 (record ops/memcacheds.cache.example.com-bbbb)"},
		"pause a halted one": {action: "pause", state: progressing(rollout.Halted), on: recB.Record, patches: 1,
			check: func(t *testing.T, s *rollout.State) {
				if s.Phase != rollout.Paused {
					t.Errorf("state %+v", s)
				}
			}, line: "paused at step 2/3"},
		"resume": {action: "resume", state: progressing(rollout.Halted), on: recB.Record, patches: 1,
			check: func(t *testing.T, s *rollout.State) {
				if s.Phase != rollout.Progressing || s.Reason != "Resumed" || !s.StepStarted.Equal(now) || s.Step != 1 {
					t.Errorf("state %+v", s)
				}
			},
			line: "memcacheds.cache.example.com: rollout from revision 1 to 2 resumed at step 2/3, its deadline running from now (record ops/memcacheds.cache.example.com-bbbb)"},
		"undo": {action: "undo", state: complete(), on: recA.Record, patches: 1,
			check: func(t *testing.T, s *rollout.State) {
				if s.Seq != 3 || !s.Undo || s.From != recB || s.To != recA || s.Phase != rollout.Progressing || s.Step != -1 || s.Above != "" {
					t.Errorf("state %+v", s)
				}
			},
			line: "memcacheds.cache.example.com: undo started, back from revision 2 to 1 by the kind's steps (record ops/memcacheds.cache.example.com-aaaa)"},
		"undo midway": {action: "undo", state: progressing(rollout.Halted), on: recA.Record, patches: 1,
			check: func(t *testing.T, s *rollout.State) {
				if s.Seq != 3 || s.Above != "1abc" || s.To != recA {
					t.Errorf("state %+v", s)
				}
			}, line: "undo started"},
		"undo of nothing moved": {action: "undo", state: func() *rollout.State {
			s := progressing(rollout.Paused)
			s.Step, s.Cutoff = -1, ""
			return s
		}(), on: recA.Record, patches: 1,
			check: func(t *testing.T, s *rollout.State) {
				if s.Phase != rollout.Complete || s.Cutoff != rollout.Last {
					t.Errorf("state %+v", s)
				}
			}, line: "rollout undone: no object had moved, every object is given revision 1"},
		// The controller moved the rollout on between our read and our
		// write: the pause is of the step it is at now.
		"pause after a conflict": {action: "pause", state: progressing(rollout.Progressing), on: recB.Record, patches: 2,
			setup: func(r *fakeRecords) {
				r.between = func(r *fakeRecords) {
					s := progressing(rollout.Progressing)
					s.Step, s.Cutoff = 2, rollout.Last
					r.set(recB.Record, s)
				}
			},
			check: func(t *testing.T, s *rollout.State) {
				if s.Phase != rollout.Paused || s.Step != 2 || s.Cutoff != rollout.Last {
					t.Errorf("state %+v, want paused at step 3", s)
				}
			}, line: "paused at step 3/3"},
		// It completed instead: nothing to pause any more.
		"pause after the rollout completed": {action: "pause", state: progressing(rollout.Progressing), patches: 1,
			setup: func(r *fakeRecords) { r.between = func(r *fakeRecords) { r.set(recB.Record, complete()) } },
			err:   "pause the rollout of memcacheds.cache.example.com: the rollout is Complete: only a Progressing or Halted rollout pauses"},
		"undo after a conflict on its record": {action: "undo", state: complete(), on: recA.Record, patches: 2,
			setup: func(r *fakeRecords) {
				r.between = func(r *fakeRecords) { r.set(recA.Record, &rollout.State{Seq: 1, To: recA, Phase: rollout.Complete}) }
			},
			check: func(t *testing.T, s *rollout.State) {
				if s.Seq != 3 || !s.Undo {
					t.Errorf("state %+v", s)
				}
			}, line: "undo started"},
		"conflicts every time": {action: "resume", state: progressing(rollout.Paused), patches: rolloutWriteAttempts,
			setup: func(r *fakeRecords) { r.conflicts = 100 }, err: "the object has been modified"},
		"pause refused":  {action: "pause", state: complete(), err: "the rollout is Complete: only a Progressing or Halted rollout pauses"},
		"resume refused": {action: "resume", state: progressing(rollout.Progressing), err: "resume the rollout of memcacheds.cache.example.com: the rollout is Progressing: only a Paused or Halted rollout resumes"},
		"undo of the first revision": {action: "undo", state: &rollout.State{Seq: 1, To: recA, Steps: 1, Cutoff: rollout.Last, Phase: rollout.Complete},
			err: "undo the rollout of memcacheds.cache.example.com: revision 1 has no revision before it to go back to"},
		"undo to a pruned record": {action: "undo", state: complete(), setup: func(r *fakeRecords) { r.items = r.items[1:] },
			err: "the record memcacheds.cache.example.com-aaaa of revision 1 is not among the kind's records in ops (pruned past revisionHistoryLimit?)"},
		"no rollout": {action: "pause", setup: func(r *fakeRecords) {
			r.items = nil
			r.add(recA.Record, nil)
		}, err: "the kind has no staged rollout"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			target, recs := rolloutFakes(t, true)
			recs.add(recA.Record, nil)
			recs.add(recB.Record, tc.state)
			if tc.setup != nil {
				tc.setup(recs)
			}
			before := map[string]string{}
			for _, m := range recs.items {
				before[m.Name] = m.ResourceVersion
			}
			var out bytes.Buffer
			err := rolloutChange(t.Context(), &out, target, tc.action, func() time.Time { return now })
			if len(recs.patches) != tc.patches {
				t.Errorf("%d patches, want %d: %v", len(recs.patches), tc.patches, recs.patches)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if out.Len() > 0 {
					t.Errorf("printed %q", out.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.line) || strings.Count(out.String(), "\n") != 1 {
				t.Errorf("printed %q, want one line with %q", out.String(), tc.line)
			}
			last := recs.patches[len(recs.patches)-1]
			if !strings.HasPrefix(last, tc.on+" ") {
				t.Fatalf("wrote %s, want a write on %s", last, tc.on)
			}
			st := recs.state(tc.on)
			tc.check(t, st)
			m := recs.get(tc.on)
			if m.Labels[rollout.LabelPhase] != string(st.Phase) || m.Labels[rollout.LabelStep] != strconv.Itoa(st.Step+1) {
				t.Errorf("labels %v for %+v", m.Labels, st)
			}
			// Each write carried a resourceVersion precondition.
			for _, p := range recs.patches {
				if !strings.Contains(p, `"resourceVersion":"`) {
					t.Errorf("a write without a precondition: %s", p)
				}
			}
			if tc.on == recA.Record {
				// Undo left the state it undoes as it was: the new one
				// is the kind's by its Seq.
				if got := recs.state(recB.Record); *got != *tc.state {
					t.Errorf("record B's state changed: %+v", got)
				}
			}
		})
	}
}

func TestParseKindResource(t *testing.T) {
	tests := map[string]struct {
		in   string
		want schema.GroupResource
		err  string
	}{
		"resource.group": {in: "memcacheds.cache.example.com", want: memcachedGR},
		"core":           {in: "namespaces", want: schema.GroupResource{Resource: "namespaces"}},
		"empty":          {in: "", err: "RESOURCE is the kind's <resource>.<group>"},
		"a Kind":         {in: "Memcached", err: "the plural resource, in lower case, not the Kind"},
		"a Kind.group":   {in: "Memcached.cache.example.com", err: "not the Kind"},
		"a version":      {in: "memcacheds.v1alpha1.cache.example.com/x", err: "without a version or a name"},
		"group/version":  {in: "cache.example.com/v1alpha1", err: "without a version or a name"},
		"with a name":    {in: "memcacheds/one", err: "without a version or a name"},
		"spaces":         {in: "memcacheds cache", err: "a lowercase RFC 1123 subdomain"},
		"underscore":     {in: "mem_cacheds.cache.example.com", err: "a lowercase RFC 1123 subdomain"},
		"leading dot":    {in: ".cache.example.com", err: "a lowercase RFC 1123 subdomain"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseKindResource(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %v, %v; want %v", got, err, tc.want)
			}
			if revision.LabelValue(got) != tc.in {
				t.Errorf("label value %s, want %s", revision.LabelValue(got), tc.in)
			}
		})
	}
}

// TestRolloutCommandErrors: what the command refuses before it reads the
// cluster, exit 1 with a message.
func TestRolloutCommandErrors(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"no RESOURCE":       {[]string{"status"}, "accepts 1 arg(s), received 0"},
		"two RESOURCEs":     {[]string{"pause", "a.b", "c.d"}, "accepts 1 arg(s), received 2"},
		"a Kind":            {[]string{"undo", "Memcached"}, `RESOURCE "Memcached"`},
		"a version":         {[]string{"resume", "memcacheds.cache.example.com/v1"}, "without a version or a name"},
		"output":            {[]string{"status", "memcacheds.cache.example.com", "-o", "yaml"}, `--output "yaml": want text or json`},
		"unknown action":    {[]string{"restart", "memcacheds.cache.example.com"}, `unknown command "restart" for "operator rollout"`},
		"output of a pause": {[]string{"pause", "memcacheds.cache.example.com", "-o", "json"}, "unknown shorthand flag: 'o'"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			cmd := NewRootCommand(&out, &out)
			cmd.SetArgs(append([]string{"rollout", "--kubeconfig", "does-not-matter"}, tc.args...))
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
