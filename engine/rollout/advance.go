package rollout

import (
	"fmt"
	"strings"
	"time"
)

// Object is what a rollout reads of one object of the kind.
type Object struct {
	Namespace, Name string
	Labels          map[string]string
	// Generation and ObservedGeneration: the status is of the object's
	// spec as it is only when they are equal.
	Generation, ObservedGeneration int64
	// ObservedRevision is the revision the object's last reconcile ran
	// with (status.observedRevision).
	ObservedRevision int64
	// Ready and Stalled are the statuses of those conditions ("True",
	// "False", "Unknown" or ""); Message the Ready condition's message.
	Ready, Stalled string
	Message        string
	// Deleting: the object has a deletion timestamp; it does not hold a
	// step.
	Deleting bool
}

// Position is o's place in the order of spec.
func (o *Object) Position(spec *Spec) string {
	return Position(o.Namespace, o.Name, spec.Canaries(o.Labels))
}

func (o *Object) key() string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// Start is the State of a rollout of the kind, number seq, from one
// revision to another, before its first step: Advance starts that step
// at once (no object is before the cutoff ""). A rollout with nothing to
// move (no from, from is to, or a spec of one step) is Complete.
func Start(spec *Spec, seq, folder int64, from, to Ref, now time.Time) *State {
	s := &State{Seq: seq, Folder: folder, From: from, To: to, Step: -1, Steps: max(len(spec.Steps), 1), StepStarted: now, Phase: Progressing,
		Reason: "Started", Message: fmt.Sprintf("from revision %d to %d", from.Number, to.Number)}
	if from.Number == 0 || from == to || !spec.Staged() {
		s.Phase, s.Cutoff, s.Step, s.Reason, s.Message = Complete, Last, s.Steps-1, "NothingToStage", fmt.Sprintf("every object is given revision %d", to.Number)
	}
	return s
}

func positions(spec *Spec, objects []Object) []string {
	out := make([]string, 0, len(objects))
	for i := range objects {
		if !objects[i].Deleting {
			out = append(out, objects[i].Position(spec))
		}
	}
	return out
}

// Change is what Advance did, for an Event and the log; "" Reason: none.
type Change struct {
	// Reason is StepStarted, Halted or Complete.
	Reason  string
	Message string
	Warning bool
}

// Advance is the next State of s over the objects at now: the step moves
// on when every object it covers is reconciled with s.To at its current
// generation and Ready; it halts when one of them is Stalled, or when the
// step has outlived the spec's deadline. Only a Progressing rollout
// moves. It returns s itself when nothing changed.
func Advance(s *State, spec *Spec, objects []Object, now time.Time) (*State, Change) {
	if s.Phase != Progressing {
		return s, Change{}
	}
	var waiting []string
	for i := range objects {
		o := &objects[i]
		if o.Deleting || o.Position(spec) > s.Cutoff {
			continue
		}
		current := o.ObservedRevision == s.To.Number && o.ObservedGeneration >= o.Generation
		switch {
		case current && o.Stalled == "True":
			return s.halt(now, "ObjectStalled", fmt.Sprintf("%s is Stalled on revision %d: %s", o.key(), s.To.Number, o.Message))
		case !current:
			waiting = append(waiting, o.key()+" (not reconciled with revision "+fmt.Sprint(s.To.Number)+" yet)")
		case o.Ready != "True":
			waiting = append(waiting, o.key()+" (not Ready: "+o.Message+")")
		}
	}
	if len(waiting) > 0 {
		if now.Sub(s.StepStarted) > spec.Deadline() {
			return s.halt(now, "StepDeadlineExceeded", fmt.Sprintf("step %s did not finish within %s: %d objects wait: %s",
				s.StepName(), spec.Deadline(), len(waiting), strings.Join(waiting[:min(3, len(waiting))], "; ")))
		}
		return s, Change{}
	}
	next := *s
	next.Steps = max(len(spec.Steps), 1)
	if s.Cutoff == Last || s.Step+1 >= len(spec.Steps) {
		next.Phase, next.Cutoff, next.Reason = Complete, Last, "Complete"
		next.Message = fmt.Sprintf("every object is on revision %d", s.To.Number)
		return &next, Change{Reason: "Complete", Message: next.Message}
	}
	next.Step++
	next.Cutoff, next.Moved = cutoff(spec.Steps[next.Step], positions(spec, objects), s.Cutoff)
	next.StepStarted = now
	next.Reason = "StepStarted"
	next.Message = fmt.Sprintf("step %s: %d objects move to revision %d", next.StepName(), next.Moved, s.To.Number)
	return &next, Change{Reason: "StepStarted", Message: next.Message}
}

func (s *State) halt(now time.Time, reason, msg string) (*State, Change) {
	next := *s
	next.Phase, next.Reason, next.Message = Halted, reason, msg
	return &next, Change{Reason: "Halted", Message: reason + ": " + msg, Warning: true}
}

// Pause, Resume and Undo are `operator rollout`'s changes of s.

// Pause holds the rollout where it is.
func Pause(s *State) (*State, error) {
	if s.Phase != Progressing && s.Phase != Halted {
		return nil, fmt.Errorf("the rollout is %s: only a Progressing or Halted rollout pauses", s.Phase)
	}
	next := *s
	next.Phase, next.Reason, next.Message = Paused, "Paused", "paused by operator rollout pause"
	return &next, nil
}

// Resume lets a Paused or Halted rollout go on, its step's deadline
// running from now.
func Resume(s *State, now time.Time) (*State, error) {
	if s.Phase != Paused && s.Phase != Halted {
		return nil, fmt.Errorf("the rollout is %s: only a Paused or Halted rollout resumes", s.Phase)
	}
	next := *s
	next.Phase, next.StepStarted, next.Reason, next.Message = Progressing, now, "Resumed", "resumed by operator rollout resume"
	return &next, nil
}

// Undo is a new rollout, s.Seq+1, back from s.To to s.From by the
// kind's steps, starting with the objects that moved first; the objects
// a rollout that had not finished never moved stay where they are.
func Undo(s *State, now time.Time) (*State, error) {
	if s.From.Number == 0 || s.From == s.To {
		return nil, fmt.Errorf("revision %d has no revision before it to go back to", s.To.Number)
	}
	next := &State{Seq: s.Seq + 1, Folder: s.Folder, From: s.To, To: s.From, Step: -1, Steps: s.Steps, StepStarted: now, Phase: Progressing,
		Reason: "Undo", Message: fmt.Sprintf("back from revision %d to %d", s.To.Number, s.From.Number), Undo: true}
	switch {
	case s.Phase == Complete || s.Cutoff == Last:
	case s.Cutoff == "":
		// No object had moved (the rollout was paused or halted before
		// its first step): every one is on s.From already. Above "" would
		// mean "none above", and give every object s.To for the undo's
		// first steps: the whole kind forward, then back.
		next.Phase, next.Cutoff, next.Step, next.Reason = Complete, Last, max(next.Steps-1, 0), "NothingToUndo"
		next.Message = fmt.Sprintf("no object had moved from revision %d: every object is given it", s.From.Number)
	default:
		next.Above = s.Cutoff
	}
	return next, nil
}
