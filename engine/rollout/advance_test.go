package rollout

import (
	"strings"
	"testing"
	"time"
)

var (
	t0   = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	rev1 = Ref{Record: "memcacheds.cache.example.com-aaaa", Number: 1}
	rev2 = Ref{Record: "memcacheds.cache.example.com-bbbb", Number: 2}
)

// stepsSpec is [1, 50%, 100%] with a deadline of 10m.
func stepsSpec(t *testing.T) *Spec {
	t.Helper()
	var s Spec
	if err := s.UnmarshalJSON([]byte(`{"steps":[1,"50%"],"stepDeadline":"10m"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestStart(t *testing.T) {
	staged := stepsSpec(t)
	tests := map[string]struct {
		spec     *Spec
		from, to Ref
		phase    Phase
		reason   string
	}{
		"staged":          {staged, rev1, rev2, Progressing, "Started"},
		"first revision":  {staged, Ref{}, rev1, Complete, "NothingToStage"},
		"same revision":   {staged, rev2, rev2, Complete, "NothingToStage"},
		"all at once":     {&Spec{}, rev1, rev2, Complete, "NothingToStage"},
		"one step of all": {&Spec{Steps: []Step{{Percent: 100}}}, rev1, rev2, Complete, "NothingToStage"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := Start(tc.spec, 7, 3, tc.from, tc.to, t0)
			if s.Phase != tc.phase || s.Reason != tc.reason || s.Seq != 7 || s.Folder != 3 || s.From != tc.from || s.To != tc.to || !s.StepStarted.Equal(t0) {
				t.Fatalf("Start = %+v, want phase %s reason %s", s, tc.phase, tc.reason)
			}
			switch tc.phase {
			case Complete:
				if s.Cutoff != Last || s.Step != s.Steps-1 || s.Revision("0") != tc.to || s.Revision("1ffff") != tc.to {
					t.Errorf("a complete start gives every object %v: %+v", tc.to, s)
				}
			case Progressing:
				if s.Cutoff != "" || s.Step != -1 || s.Steps != 3 || s.Revision(Position("default", "x", false)) != tc.from {
					t.Errorf("a staged start moves nothing yet: %+v", s)
				}
			}
		})
	}
}

// TestAdvance: the decision of the next state, from a state and the
// objects' statuses at a time. Objects are o[0..3] in the order they move;
// each is reconciled with revision 2, current and Ready, unless the case
// changes it.
func TestAdvance(t *testing.T) {
	spec := stepsSpec(t)
	base, pos := ordered(4, nil)
	at := func(step int, cutoff string, phase Phase) *State {
		return &State{Seq: 1, From: rev1, To: rev2, Step: step, Steps: 3, Cutoff: cutoff, StepStarted: t0, Phase: phase}
	}
	tests := map[string]struct {
		state   *State
		objects func(o []Object)
		now     time.Time
		// want: nil when the state must not change (Advance returns it).
		want   *State
		change string
	}{
		"start: first step": {
			state: at(-1, "", Progressing), objects: func(o []Object) { allOn(o, 1) }, now: t0.Add(time.Second),
			want: &State{Step: 0, Cutoff: pos[0], Moved: 1, Phase: Progressing, StepStarted: t0.Add(time.Second), Reason: "StepStarted"}, change: "StepStarted",
		},
		"start, even past the deadline": {
			state: at(-1, "", Progressing), objects: func(o []Object) { allOn(o, 1) }, now: t0.Add(time.Hour),
			want: &State{Step: 0, Cutoff: pos[0], Moved: 1, Phase: Progressing, StepStarted: t0.Add(time.Hour), Reason: "StepStarted"}, change: "StepStarted",
		},
		"waits for the reconcile with To": {
			state: at(0, pos[0], Progressing), objects: func(o []Object) { o[0].ObservedRevision = 1 }, now: t0.Add(time.Minute),
		},
		"waits for the current generation": {
			state: at(0, pos[0], Progressing), objects: func(o []Object) { o[0].Generation = 2 }, now: t0.Add(time.Minute),
		},
		"waits for Ready": {
			state: at(0, pos[0], Progressing), objects: func(o []Object) { o[0].Ready = "False" }, now: t0.Add(time.Minute),
		},
		"waits for a Ready unknown": {
			state: at(0, pos[0], Progressing), objects: func(o []Object) { o[0].Ready = "" }, now: t0.Add(time.Minute),
		},
		"objects after the cutoff do not hold it": {
			state: at(0, pos[0], Progressing), objects: func(o []Object) { allOn(o[1:], 1); o[3].Ready = "False"; o[2].Stalled = "True" }, now: t0.Add(time.Minute),
			want: &State{Step: 1, Cutoff: pos[1], Moved: 2, Phase: Progressing, StepStarted: t0.Add(time.Minute), Reason: "StepStarted"}, change: "StepStarted",
		},
		"a deleting object does not hold it": {
			state: at(1, pos[1], Progressing), objects: func(o []Object) { o[1].ObservedRevision = 1; o[1].Deleting = true }, now: t0.Add(time.Minute),
			want: &State{Step: 2, Cutoff: Last, Moved: 3, Phase: Progressing, StepStarted: t0.Add(time.Minute), Reason: "StepStarted"}, change: "StepStarted",
		},
		"halts on Stalled": {
			state: at(1, pos[1], Progressing), objects: func(o []Object) { o[1].Stalled = "True"; o[1].Ready = "False"; o[1].Message = "image pull" }, now: t0.Add(time.Minute),
			want: &State{Step: 1, Cutoff: pos[1], Phase: Halted, StepStarted: t0, Reason: "ObjectStalled"}, change: "Halted",
		},
		"a Stalled of the old revision waits": {
			state: at(1, pos[1], Progressing), objects: func(o []Object) { o[1].ObservedRevision = 1; o[1].Stalled = "True" }, now: t0.Add(time.Minute),
		},
		"waits up to the deadline": {
			state: at(1, pos[1], Progressing), objects: func(o []Object) { o[1].Ready = "False" }, now: t0.Add(10 * time.Minute),
		},
		"halts past the deadline": {
			state: at(1, pos[1], Progressing), objects: func(o []Object) { o[1].Ready = "False" }, now: t0.Add(10*time.Minute + time.Second),
			want: &State{Step: 1, Cutoff: pos[1], Phase: Halted, StepStarted: t0, Reason: "StepDeadlineExceeded"}, change: "Halted",
		},
		"complete after the last step": {
			state: at(2, Last, Progressing), now: t0.Add(time.Minute),
			want: &State{Step: 2, Cutoff: Last, Phase: Complete, StepStarted: t0, Reason: "Complete"}, change: "Complete",
		},
		"the last step waits too": {
			state: at(2, Last, Progressing), objects: func(o []Object) { o[3].ObservedRevision = 1 }, now: t0.Add(time.Minute),
		},
		"complete when a step covered every object": {
			state: at(0, Last, Progressing), now: t0.Add(time.Minute),
			want: &State{Step: 0, Cutoff: Last, Phase: Complete, StepStarted: t0, Reason: "Complete"}, change: "Complete",
		},
		"paused does not move":   {state: at(0, pos[0], Paused), now: t0.Add(time.Hour)},
		"halted does not move":   {state: at(0, pos[0], Halted), now: t0.Add(time.Hour)},
		"complete does not move": {state: at(2, Last, Complete), now: t0.Add(time.Hour)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := make([]Object, len(base))
			for i, o := range base {
				o.Generation, o.ObservedGeneration, o.ObservedRevision, o.Ready, o.Stalled = 1, 1, 2, "True", "False"
				objs[i] = o
			}
			if tc.objects != nil {
				tc.objects(objs)
			}
			before := *tc.state
			got, change := Advance(tc.state, spec, objs, tc.now)
			if *tc.state != before {
				t.Fatalf("Advance changed its input: %+v", tc.state)
			}
			if tc.want == nil {
				if got != tc.state || change.Reason != "" {
					t.Fatalf("Advance = %+v, %+v; want the state as it was", got, change)
				}
				return
			}
			w := tc.want
			if got.Step != w.Step || got.Cutoff != w.Cutoff || got.Phase != w.Phase || !got.StepStarted.Equal(w.StepStarted) || got.Reason != w.Reason ||
				(w.Moved != 0 && got.Moved != w.Moved) || got.Seq != 1 || got.From != rev1 || got.To != rev2 || got.Steps != 3 {
				t.Errorf("Advance = %+v\nwant %+v", got, w)
			}
			if got.Cutoff < tc.state.Cutoff {
				t.Errorf("cutoff went back from %s to %s", tc.state.Cutoff, got.Cutoff)
			}
			if change.Reason != tc.change || change.Warning != (tc.change == "Halted") || change.Message == "" {
				t.Errorf("change = %+v, want %s", change, tc.change)
			}
		})
	}
}

func allOn(objs []Object, rev int64) {
	for i := range objs {
		objs[i].ObservedRevision = rev
	}
}

// TestAdvanceMessages: a halt says which object and why, a deadline how
// many wait and names at most three.
func TestAdvanceMessages(t *testing.T) {
	spec := stepsSpec(t)
	objs, _ := ordered(8, nil)
	for i := range objs {
		objs[i].ObservedRevision = 1
	}
	s := &State{Seq: 1, From: rev1, To: rev2, Step: 2, Steps: 3, Cutoff: Last, StepStarted: t0, Phase: Progressing}
	got, change := Advance(s, spec, objs, t0.Add(time.Hour))
	if got.Phase != Halted || !strings.Contains(got.Message, "step 3/3 did not finish within 10m0s: 8 objects wait") ||
		strings.Count(got.Message, "not reconciled with revision 2") != 3 || !strings.HasPrefix(change.Message, "StepDeadlineExceeded: ") {
		t.Errorf("message %q, change %+v", got.Message, change)
	}
	objs[5].ObservedRevision, objs[5].Stalled, objs[5].Message = 2, "True", "no quota"
	got, _ = Advance(s, spec, objs, t0)
	if want := "default/" + objs[5].Name + " is Stalled on revision 2: no quota"; got.Phase != Halted || got.Message != want {
		t.Errorf("message %q, want %q", got.Message, want)
	}
}

// TestAdvanceWalk runs a rollout to its end on 10 objects: each step
// moves more objects, the cutoff never goes back, an object once given To
// keeps it, and the rollout completes after the third step.
func TestAdvanceWalk(t *testing.T) {
	spec := stepsSpec(t)
	objs, _ := ordered(10, nil)
	s := Start(spec, 1, 2, rev1, rev2, t0)
	now := t0
	var moved []int
	given := map[string]bool{}
	for range 10 {
		if s.Phase == Complete {
			break
		}
		// The controller reconciles each object with the revision the
		// state gives it; every one gets Ready.
		for i := range objs {
			r := s.Revision(objs[i].Position(spec))
			objs[i].ObservedRevision, objs[i].Ready = r.Number, "True"
			if r == rev2 {
				given[objs[i].Name] = true
			} else if given[objs[i].Name] {
				t.Fatalf("%s went back to %v at %+v", objs[i].Name, r, s)
			}
		}
		now = now.Add(time.Minute)
		next, _ := Advance(s, spec, objs, now)
		if next.Cutoff < s.Cutoff {
			t.Fatalf("cutoff went back: %s -> %s", s.Cutoff, next.Cutoff)
		}
		if next.Phase == Progressing {
			moved = append(moved, next.Moved)
		}
		s = next
	}
	if s.Phase != Complete || len(given) != 10 {
		t.Fatalf("state %+v, %d objects given To", s, len(given))
	}
	if want := []int{1, 5, 10}; len(moved) != 3 || moved[0] != want[0] || moved[1] != want[1] || moved[2] != want[2] {
		t.Errorf("moved %v per step, want %v", moved, want)
	}
}
