package rollout

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Where a kind's rollout is kept: on the record (ControllerRevision) of
// the revision it rolls out to, so that `kubectl get controllerrevisions
// -L operator.tmplop.io/rollout-phase` shows it and `kubectl wait` waits
// for it; the kind's rollout is the one of the highest Seq among its
// records.
const (
	// AnnotationState is the State, in JSON.
	AnnotationState = "operator.tmplop.io/rollout"
	// LabelPhase is the State's Phase, for kubectl's -L and wait.
	LabelPhase = "operator.tmplop.io/rollout-phase"
	// LabelStep is the step in progress, from 1, for kubectl's -L.
	LabelStep = "operator.tmplop.io/rollout-step"
)

// Phase is where a rollout is.
type Phase string

const (
	// Progressing: the step in progress waits for its objects.
	Progressing Phase = "Progressing"
	// Paused: by `operator rollout pause`; objects stay on the revision
	// they are given, and the step's deadline does not run.
	Paused Phase = "Paused"
	// Halted: an object of the step went Stalled or the step outlived its
	// deadline; nothing moves until resume or undo.
	Halted Phase = "Halted"
	// Complete: every object is given the revision rolled out to.
	Complete Phase = "Complete"
)

// Ref names a revision: its record and number.
type Ref struct {
	Record string `json:"record"`
	Number int64  `json:"number"`
}

// State is a kind's rollout from one revision to another.
type State struct {
	// Seq orders a kind's rollouts: the kind's rollout is its highest.
	Seq int64 `json:"seq"`
	// Folder is the number of the folder's revision the rollout was
	// started for: a replica serving another folder starts a new one.
	Folder int64 `json:"folder"`
	// From is the revision objects not yet moved stay on; To the one
	// they move to.
	From Ref `json:"from"`
	To   Ref `json:"to"`
	// Step is the step in progress, from 0; Steps how many there are.
	Step  int `json:"step"`
	Steps int `json:"steps"`
	// Cutoff is the last position (Position) the steps so far have moved:
	// an object at or before it is given To.
	Cutoff string `json:"cutoff"`
	// Above, in an undo of a rollout that had not finished, is the cutoff
	// it had reached: the objects after it never moved, are on To
	// already, and stay there.
	Above string `json:"above,omitempty"`
	// Moved is how many objects the cutoff covered when it was set.
	Moved int `json:"moved"`
	// StepStarted is when the step in progress started (its deadline
	// runs from it).
	StepStarted time.Time `json:"stepStarted"`
	Phase       Phase     `json:"phase"`
	// Reason and Message say why the phase is what it is (a halt's
	// object and condition).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Undo: the rollout goes back to the revision before (operator
	// rollout undo).
	Undo bool `json:"undo,omitempty"`
}

// Revision is the revision an object at position pos renders with.
func (s *State) Revision(pos string) Ref {
	if s.Phase == Complete || pos <= s.Cutoff || (s.Above != "" && pos > s.Above) {
		return s.To
	}
	return s.From
}

// Encode is the State's annotation value.
func (s *State) Encode() string {
	b, _ := json.Marshal(s) // a struct of plain fields
	return string(b)
}

// Labels are the labels that show the State to kubectl.
func (s *State) Labels() map[string]string {
	return map[string]string{LabelPhase: string(s.Phase), LabelStep: strconv.Itoa(s.Step + 1)}
}

// Decode reads a record's State; nil, nil when it holds none.
func Decode(annotations map[string]string) (*State, error) {
	v, ok := annotations[AnnotationState]
	if !ok {
		return nil, nil
	}
	var s State
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return nil, fmt.Errorf("decode the rollout annotation %s: %w", AnnotationState, err)
	}
	switch s.Phase {
	case Progressing, Paused, Halted, Complete:
	default:
		return nil, fmt.Errorf("rollout annotation %s: unknown phase %q", AnnotationState, s.Phase)
	}
	return &s, nil
}

// StepName is the step in progress as people count it: "2/4".
func (s *State) StepName() string { return fmt.Sprintf("%d/%d", s.Step+1, s.Steps) }
