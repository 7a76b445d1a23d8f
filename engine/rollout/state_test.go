package rollout

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRevision: which revision an object at a position renders with.
func TestRevision(t *testing.T) {
	_, pos := ordered(6, nil)
	tests := map[string]struct {
		state State
		// want is, per position, 1 (From) or 2 (To).
		want [6]int64
	}{
		"nothing moved":     {State{From: rev1, To: rev2, Phase: Progressing}, [6]int64{1, 1, 1, 1, 1, 1}},
		"first two":         {State{From: rev1, To: rev2, Cutoff: pos[1], Phase: Progressing}, [6]int64{2, 2, 1, 1, 1, 1}},
		"paused keeps them": {State{From: rev1, To: rev2, Cutoff: pos[1], Phase: Paused}, [6]int64{2, 2, 1, 1, 1, 1}},
		"halted keeps them": {State{From: rev1, To: rev2, Cutoff: pos[2], Phase: Halted}, [6]int64{2, 2, 2, 1, 1, 1}},
		"last":              {State{From: rev1, To: rev2, Cutoff: Last, Phase: Progressing}, [6]int64{2, 2, 2, 2, 2, 2}},
		"complete":          {State{From: rev1, To: rev2, Cutoff: pos[0], Phase: Complete}, [6]int64{2, 2, 2, 2, 2, 2}},
		// An undo (From 2, To 1) of a rollout that had moved pos[0..3]:
		// pos[4] and pos[5] never moved, are on 1, and stay there.
		"undo, nothing back yet": {State{From: rev2, To: rev1, Above: pos[3], Phase: Progressing, Undo: true}, [6]int64{2, 2, 2, 2, 1, 1}},
		"undo, first back":       {State{From: rev2, To: rev1, Cutoff: pos[0], Above: pos[3], Phase: Progressing, Undo: true}, [6]int64{1, 2, 2, 2, 1, 1}},
		"undo, all back":         {State{From: rev2, To: rev1, Cutoff: pos[3], Above: pos[3], Phase: Progressing, Undo: true}, [6]int64{1, 1, 1, 1, 1, 1}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for i, p := range pos {
				if got := tc.state.Revision(p); got.Number != tc.want[i] {
					t.Errorf("object %d: revision %d, want %d", i, got.Number, tc.want[i])
				}
			}
		})
	}
}

func TestPauseResume(t *testing.T) {
	now := t0.Add(time.Hour)
	for _, phase := range []Phase{Progressing, Paused, Halted, Complete} {
		s := &State{Seq: 4, From: rev1, To: rev2, Step: 1, Steps: 3, Cutoff: "1abc", StepStarted: t0, Phase: phase, Reason: "ObjectStalled"}
		t.Run(string(phase), func(t *testing.T) {
			p, err := Pause(s)
			switch phase {
			case Progressing, Halted:
				if err != nil || p.Phase != Paused || p.Reason != "Paused" || p.Cutoff != s.Cutoff || p.Step != 1 || p.Seq != 4 || !p.StepStarted.Equal(t0) {
					t.Errorf("Pause = %+v, %v", p, err)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), "the rollout is "+string(phase)+": only a Progressing or Halted rollout pauses") {
					t.Errorf("Pause of %s: %v, want a refusal", phase, err)
				}
			}
			r, err := Resume(s, now)
			switch phase {
			case Paused, Halted:
				if err != nil || r.Phase != Progressing || r.Reason != "Resumed" || !r.StepStarted.Equal(now) || r.Cutoff != s.Cutoff || r.Step != 1 || r.Seq != 4 {
					t.Errorf("Resume = %+v, %v", r, err)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), "the rollout is "+string(phase)+": only a Paused or Halted rollout resumes") {
					t.Errorf("Resume of %s: %v, want a refusal", phase, err)
				}
			}
			if s.Phase != phase || s.Reason != "ObjectStalled" {
				t.Errorf("the state was changed: %+v", s)
			}
		})
	}
}

func TestUndo(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := map[string]struct {
		state  State
		err    string
		phase  Phase
		cutoff string
		above  string
	}{
		"complete":         {state: State{From: rev1, To: rev2, Cutoff: Last, Phase: Complete}, phase: Progressing},
		"halted midway":    {state: State{From: rev1, To: rev2, Cutoff: "1abc", Phase: Halted}, phase: Progressing, above: "1abc"},
		"paused midway":    {state: State{From: rev1, To: rev2, Cutoff: "0abc", Phase: Paused}, phase: Progressing, above: "0abc"},
		"at the last step": {state: State{From: rev1, To: rev2, Cutoff: Last, Phase: Halted}, phase: Progressing},
		// Nothing had moved: every object is on From, the undo's To.
		"before its first step": {state: State{From: rev1, To: rev2, Step: -1, Phase: Paused}, phase: Complete, cutoff: Last},
		"first revision":        {state: State{To: rev1, Cutoff: Last, Phase: Complete}, err: "revision 1 has no revision before it to go back to"},
		"same revision":         {state: State{From: rev2, To: rev2, Cutoff: Last, Phase: Complete}, err: "revision 2 has no revision before it"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := tc.state
			s.Seq, s.Folder, s.Steps, s.StepStarted = 5, 9, 3, t0
			u, err := Undo(&s, now)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Undo: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.Seq != 6 || u.Folder != 9 || u.From != s.To || u.To != s.From || !u.Undo || u.Steps != 3 || !u.StepStarted.Equal(now) ||
				u.Phase != tc.phase || u.Cutoff != tc.cutoff || u.Above != tc.above {
				t.Errorf("Undo = %+v", u)
			}
			if tc.phase == Progressing && u.Step != -1 {
				t.Errorf("an undo starts before its first step: %+v", u)
			}
			// Before the undo's first step, every object keeps the revision it had.
			_, pos := ordered(8, nil)
			for _, p := range pos {
				if had, has := s.Revision(p), u.Revision(p); had != has {
					t.Errorf("position %s: revision %v before the undo, %v after", p, had, has)
				}
			}
		})
	}
}

func TestEncodeDecode(t *testing.T) {
	s := &State{Seq: 3, Folder: 2, From: rev1, To: rev2, Step: 1, Steps: 3, Cutoff: "1abc", Above: "1def", Moved: 4,
		StepStarted: t0, Phase: Halted, Reason: "ObjectStalled", Message: "x", Undo: true}
	got, err := Decode(map[string]string{AnnotationState: s.Encode(), "other": "y"})
	if err != nil || got == nil || *got != *s {
		t.Fatalf("Decode(Encode) = %+v, %v; want %+v", got, err, s)
	}
	if l := s.Labels(); l[LabelPhase] != "Halted" || l[LabelStep] != "2" || len(l) != 2 {
		t.Errorf("Labels = %v", l)
	}
	if s.StepName() != "2/3" {
		t.Errorf("StepName = %s", s.StepName())
	}
	if s, err := Decode(map[string]string{"other": "y"}); s != nil || err != nil {
		t.Errorf("Decode without the annotation = %v, %v; want nil, nil", s, err)
	}
	for name, v := range map[string]string{
		"garbage":       "not json",
		"wrong type":    `{"seq":"one","phase":"Complete"}`,
		"no phase":      `{"seq":1}`,
		"unknown phase": `{"seq":1,"phase":"Rolling"}`,
	} {
		if s, err := Decode(map[string]string{AnnotationState: v}); err == nil || s != nil || !strings.Contains(err.Error(), AnnotationState) {
			t.Errorf("%s: Decode = %v, %v; want an error naming the annotation", name, s, err)
		}
	}
}

func record(name string, s *State) metav1.PartialObjectMetadata {
	r := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"x": "y"}}}
	if s != nil {
		r.Annotations[AnnotationState] = s.Encode()
	}
	return r
}

func TestCurrent(t *testing.T) {
	st := func(seq int64) *State { return &State{Seq: seq, Phase: Complete} }
	tests := map[string]struct {
		records []metav1.PartialObjectMetadata
		want    string // the record of the current state; "" none
		seq     int64
		err     string
	}{
		"none":              {},
		"no state":          {records: []metav1.PartialObjectMetadata{record("a", nil), record("b", nil)}},
		"one":               {records: []metav1.PartialObjectMetadata{record("a", nil), record("b", st(1))}, want: "b", seq: 1},
		"highest seq first": {records: []metav1.PartialObjectMetadata{record("a", st(3)), record("b", st(2)), record("c", nil)}, want: "a", seq: 3},
		"highest seq last":  {records: []metav1.PartialObjectMetadata{record("a", st(1)), record("b", st(2)), record("c", st(12))}, want: "c", seq: 12},
		"garbage": {records: []metav1.PartialObjectMetadata{record("a", st(3)), {ObjectMeta: metav1.ObjectMeta{Name: "bad", Annotations: map[string]string{AnnotationState: "{"}}}},
			err: "revision record bad: decode the rollout annotation", seq: 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, on, err := Current(tc.records)
			if HighestSeq(tc.records) != tc.seq {
				t.Errorf("HighestSeq = %d, want %d", HighestSeq(tc.records), tc.seq)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || s != nil || on != nil {
					t.Fatalf("Current = %v, %v, %v; want %q", s, on, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if s != nil || on != nil {
					t.Errorf("Current = %+v on %v, want none", s, on)
				}
				return
			}
			if s == nil || on == nil || on.Name != tc.want || s.Seq != tc.seq {
				t.Errorf("Current = %+v on %v, want seq %d on %s", s, on, tc.seq, tc.want)
			}
		})
	}
}
