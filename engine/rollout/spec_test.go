package rollout

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// parse reads a rollout as kind.yaml holds it (strictly, as
// render.DecodeYAML does) and validates it.
func parse(t *testing.T, text string) (*Spec, error) {
	t.Helper()
	var doc struct {
		Rollout Spec `json:"rollout"`
	}
	if err := yaml.UnmarshalStrict([]byte(text), &doc); err != nil {
		return nil, err
	}
	if err := doc.Rollout.Validate(); err != nil {
		return nil, err
	}
	return &doc.Rollout, nil
}

// TestSpec: what kind.yaml's rollout reads as, and what it refuses.
func TestSpec(t *testing.T) {
	tests := map[string]struct {
		text string
		// steps are the steps after Validate, as kind.yaml writes them.
		steps    string
		staged   bool
		deadline time.Duration
		canary   bool
		err      string
	}{
		"absent":                     {text: "{}", deadline: DefaultStepDeadline},
		"all":                        {text: "rollout: all", deadline: DefaultStepDeadline},
		"empty mapping":              {text: "rollout: {}", deadline: DefaultStepDeadline},
		"counts and percent":         {text: "rollout: {steps: [1, 3, 10%, 50%, 100%]}", steps: "1 3 10% 50% 100%", staged: true, deadline: DefaultStepDeadline},
		"strings":                    {text: `rollout: {steps: ["2", "25%", "all"]}`, steps: "2 25% 100%", staged: true, deadline: DefaultStepDeadline},
		"100% appended":              {text: "rollout: {steps: [1, 50%]}", steps: "1 50% 100%", staged: true, deadline: DefaultStepDeadline},
		"one count":                  {text: "rollout: {steps: [5]}", steps: "5 100%", staged: true, deadline: DefaultStepDeadline},
		"all alone":                  {text: "rollout: {steps: [all]}", steps: "100%", deadline: DefaultStepDeadline},
		"count then smaller percent": {text: "rollout: {steps: [5, 1%]}", steps: "5 1% 100%", staged: true, deadline: DefaultStepDeadline},
		"deadline":                   {text: "rollout: {steps: [1], stepDeadline: 90s}", steps: "1 100%", staged: true, deadline: 90 * time.Second},
		"canary":                     {text: "rollout: {steps: [1], canary: {matchLabels: {tier: canary}}}", steps: "1 100%", staged: true, deadline: DefaultStepDeadline, canary: true},

		"another word":         {text: "rollout: some", err: `rollout "some": want all`},
		"zero":                 {text: "rollout: {steps: [0]}", err: "step 0: a step moves at least one object"},
		"negative":             {text: "rollout: {steps: [-2]}", err: "step -2: a step moves at least one object"},
		"zero percent":         {text: "rollout: {steps: [0%]}", err: `step "0%": a percentage is between 1% and 100%`},
		"negative percent":     {text: "rollout: {steps: [-5%]}", err: `step "-5%": a percentage is between 1% and 100%`},
		"101%":                 {text: "rollout: {steps: [101%]}", err: "step 101%: a percentage is between 1% and 100%"},
		"fraction":             {text: "rollout: {steps: [1.5]}", err: "a step is a number of objects or a percentage"},
		"fraction percent":     {text: "rollout: {steps: [2.5%]}", err: `step "2.5%": a percentage is a whole number`},
		"word":                 {text: "rollout: {steps: [half]}", err: `step "half": a step is a number of objects`},
		"list":                 {text: "rollout: {steps: [[1]]}", err: "a step is a number of objects or a percentage"},
		"equal counts":         {text: "rollout: {steps: [2, 2]}", err: "step 2 (2) does not move more objects than step 1 (2)"},
		"shrinking counts":     {text: "rollout: {steps: [1, 5, 3]}", err: "step 3 (3) does not move more objects than step 2 (5)"},
		"shrinking percents":   {text: "rollout: {steps: [50%, 10%]}", err: "step 2 (10%) does not move more objects than step 1 (50%)"},
		"after all":            {text: "rollout: {steps: [1, all, 2]}", err: "step 3 (2) comes after the step that moves every object"},
		"canary without steps": {text: "rollout: {canary: {matchLabels: {tier: canary}}}", err: "rollout: canary needs steps"},
		"bad canary":           {text: "rollout: {steps: [1], canary: {matchExpressions: [{key: tier, operator: Bogus}]}}", err: "rollout: canary:"},
		"negative deadline":    {text: "rollout: {steps: [1], stepDeadline: -1m}", err: "stepDeadline must not be negative"},
		"misspelt key":         {text: "rollout: {step: [1, 50%]}", err: `unknown field "step"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := parse(t, tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to say %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var steps []string
			for _, st := range s.Steps {
				steps = append(steps, st.String())
			}
			if got := strings.Join(steps, " "); got != tc.steps {
				t.Errorf("steps = %q, want %q", got, tc.steps)
			}
			if s.Staged() != tc.staged {
				t.Errorf("Staged() = %v, want %v", s.Staged(), tc.staged)
			}
			if s.Deadline() != tc.deadline {
				t.Errorf("Deadline() = %v, want %v", s.Deadline(), tc.deadline)
			}
			if got := s.Canaries(map[string]string{"tier": "canary"}); got != tc.canary {
				t.Errorf("Canaries(tier=canary) = %v, want %v", got, tc.canary)
			}
			if s.Canaries(map[string]string{"tier": "main"}) {
				t.Error("Canaries(tier=main) = true")
			}
			// Validate again (a second load of the same Spec) changes nothing.
			n := len(s.Steps)
			if err := s.Validate(); err != nil || len(s.Steps) != n {
				t.Errorf("second Validate: %v, %d steps, want nil, %d", err, len(s.Steps), n)
			}
		})
	}
}

// TestStepJSON: a step is written back as kind.yaml writes it.
func TestStepJSON(t *testing.T) {
	b, err := json.Marshal([]Step{{Count: 3}, {Percent: 10}, {Percent: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `[3,"10%","100%"]` {
		t.Errorf("json = %s", b)
	}
	var back []Step
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 3 || back[0].Count != 3 || back[1].Percent != 10 || !back[2].all() {
		t.Errorf("read back %+v, %v", back, err)
	}
}

// TestStaged: a nil Spec (a kind.yaml without rollout) moves all at once.
func TestStaged(t *testing.T) {
	var s *Spec
	if s.Staged() {
		t.Error("nil Spec is staged")
	}
}
