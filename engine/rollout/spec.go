package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// DefaultStepDeadline is how long a step may take when kind.yaml does not
// say: a Deployment's progressDeadlineSeconds.
const DefaultStepDeadline = 10 * time.Minute

// Spec is kind.yaml's rollout. The zero Spec (or "all") moves every
// object at once, as a folder change always did.
//
//	rollout: all
//	rollout:
//	  steps: [1, 10%, 50%, 100%]
//	  canary: {matchLabels: {tier: canary}}
//	  stepDeadline: 10m
type Spec struct {
	// Steps are the objects each step has moved, counted from the first
	// object in order: a number, or a percentage of the kind's objects
	// when the step starts. The last is always every object (100% is
	// added when missing). Empty: all at once.
	Steps []Step `json:"steps,omitempty"`
	// Canary selects the objects that go first, in their hash order.
	Canary *metav1.LabelSelector `json:"canary,omitempty"`
	// StepDeadline is how long a step may wait for its objects to be
	// Ready before the rollout halts; 0: DefaultStepDeadline.
	StepDeadline metav1.Duration `json:"stepDeadline,omitempty"`

	canary labels.Selector
	// word is the rollout written as a word ("all"), for Validate.
	word string
}

// Step is how many objects a step has moved: Count of them, or Percent
// of the kind's objects (rounded up).
type Step struct {
	Count   int
	Percent int
	// err is why the step as written is not one: kept for Validate, so
	// that the error is reported at the step's line of kind.yaml.
	err error
}

// String is the step as kind.yaml writes it.
func (s Step) String() string {
	if s.Percent != 0 {
		return strconv.Itoa(s.Percent) + "%"
	}
	return strconv.Itoa(s.Count)
}

// MarshalJSON writes a step as kind.yaml does.
func (s Step) MarshalJSON() ([]byte, error) {
	if s.Percent > 0 {
		return json.Marshal(s.String())
	}
	return json.Marshal(s.Count)
}

// UnmarshalJSON reads 3, "3", "10%" or "all"; anything else is kept as
// an error for Validate.
func (s *Step) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*s = Step{Count: n}
		s.err = s.valid()
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		*s = Step{err: fmt.Errorf("a step is a number of objects or a percentage (10%%), not %s", b)}
		return nil
	}
	st, err := ParseStep(str)
	*s = st
	s.err = err
	return nil
}

// ParseStep reads "3", "10%" or "all".
func ParseStep(str string) (Step, error) {
	str = strings.TrimSpace(str)
	if str == "all" {
		return Step{Percent: 100}, nil
	}
	var s Step
	if p, ok := strings.CutSuffix(str, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil {
			return s, fmt.Errorf("step %q: a percentage is a whole number and %%", str)
		}
		if n < 1 {
			// Step{Percent: 0} would read as a count of 0.
			return s, fmt.Errorf("step %q: a percentage is between 1%% and 100%%", str)
		}
		s = Step{Percent: n}
	} else {
		n, err := strconv.Atoi(str)
		if err != nil {
			return s, fmt.Errorf("step %q: a step is a number of objects or a percentage (10%%)", str)
		}
		s = Step{Count: n}
	}
	return s, s.valid()
}

func (s Step) valid() error {
	switch {
	case s.Percent < 0 || s.Percent > 100:
		return fmt.Errorf("step %s: a percentage is between 1%% and 100%%", s)
	case s.Percent == 0 && s.Count < 1:
		return fmt.Errorf("step %s: a step moves at least one object", s)
	}
	return nil
}

// all is the last step: every object.
func (s Step) all() bool { return s.Percent == 100 }

// UnmarshalJSON reads "all" or the steps' mapping.
func (s *Spec) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = Spec{word: str}
		return nil
	}
	// Strictly, as kind.yaml is read (render.DecodeYAML): a field of
	// its own UnmarshalJSON escapes the caller's decoder, and a misspelt
	// key (step: for steps:) would silently roll out all at once.
	type plain Spec
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	*s = Spec(p)
	return nil
}

// Validate checks the steps (growing, each larger than the one before
// when both are counts or both percentages), adds the last step when it
// is missing and parses the canary selector. Call it once, at load.
func (s *Spec) Validate() error {
	if s.word != "" && s.word != "all" {
		return fmt.Errorf("rollout %q: want all, or a mapping with steps", s.word)
	}
	for i, st := range s.Steps {
		if st.err != nil {
			return fmt.Errorf("rollout: step %d: %w", i+1, st.err)
		}
	}
	if s.StepDeadline.Duration < 0 {
		return errors.New("rollout: stepDeadline must not be negative")
	}
	if len(s.Steps) == 0 {
		if s.Canary != nil {
			return errors.New("rollout: canary needs steps")
		}
		return nil
	}
	for i := 1; i < len(s.Steps); i++ {
		a, b := s.Steps[i-1], s.Steps[i]
		if a.all() {
			return fmt.Errorf("rollout: step %d (%s) comes after the step that moves every object", i+1, b)
		}
		if (a.Percent > 0) == (b.Percent > 0) && (a.Count >= b.Count && a.Percent >= b.Percent) {
			return fmt.Errorf("rollout: step %d (%s) does not move more objects than step %d (%s)", i+1, b, i, a)
		}
	}
	if !s.Steps[len(s.Steps)-1].all() {
		s.Steps = append(s.Steps, Step{Percent: 100})
	}
	if s.Canary != nil {
		sel, err := metav1.LabelSelectorAsSelector(s.Canary)
		if err != nil {
			return fmt.Errorf("rollout: canary: %w", err)
		}
		s.canary = sel
	}
	return nil
}

// Staged reports whether the kind rolls out in steps; false: all at once.
func (s *Spec) Staged() bool { return s != nil && len(s.Steps) > 1 }

// Deadline is the time a step may take.
func (s *Spec) Deadline() time.Duration {
	if s.StepDeadline.Duration > 0 {
		return s.StepDeadline.Duration
	}
	return DefaultStepDeadline
}

// Canaries reports whether an object of these labels goes first.
func (s *Spec) Canaries(l map[string]string) bool {
	return s.canary != nil && !s.canary.Empty() && s.canary.Matches(labels.Set(l))
}
