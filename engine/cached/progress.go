package cached

import "encoding/json"

// Progress is what a kind's rollout reads of an object's status
// (engine/rollout): which generation and revision its last reconcile ran
// with, and how that went.
type Progress struct {
	ObservedGeneration int64
	ObservedRevision   int64
	// Ready and Stalled are those conditions' statuses ("" when absent);
	// Message is the Ready condition's message.
	Ready, Stalled, Message string
}

// Progress decodes the object's status fields a rollout reads, and only
// those: a rollout reads every object of its kind at each look.
func (c *Object) Progress() Progress {
	var o struct {
		Status struct {
			ObservedGeneration int64 `json:"observedGeneration"`
			ObservedRevision   int64 `json:"observedRevision"`
			Conditions         []struct {
				Type    string `json:"type"`
				Status  string `json:"status"`
				Message string `json:"message"`
			} `json:"conditions"`
		} `json:"status"`
	}
	var p Progress
	if c.raw == nil || json.Unmarshal(c.raw, &o) != nil {
		return p
	}
	p.ObservedGeneration, p.ObservedRevision = o.Status.ObservedGeneration, o.Status.ObservedRevision
	for _, cond := range o.Status.Conditions {
		switch cond.Type {
		case "Ready":
			p.Ready, p.Message = cond.Status, cond.Message
		case "Stalled":
			p.Stalled = cond.Status
		}
	}
	return p
}
